package allocator

import "github.com/gleaner-hpc/gleaner/curve"

// Point and Curve are the throughput curve of package curve (a pure leaf
// the JPA shares without linking the solver). A trial's curve must reach
// its MaxNodes (Problem validation checks it).
type (
	Point = curve.Point
	Curve = curve.Curve
)
