// Package nas holds neural-architecture spaces: what an architecture is,
// the JSON a trainer reads to build it, its canonical form (isomorphic
// architectures are one), random sampling, mutation and neighbours, and
// its cost (FLOPs and parameters). Two spaces:
//
//   - cell: a NAS-Bench-201-style cell (Dong & Yang, "NAS-Bench-201:
//     Extending the Scope of Reproducible Neural Architecture Search",
//     ICLR 2020): a DAG over a few nodes with one operation on every
//     edge, the cell stacked into a small ResNet-like network;
//   - layers: a stack of dense (mlp) or 3×3 convolutional (cnn) layers,
//     each a width and an activation, optionally residual.
//
// Package hpo carries architecture parameters (type architecture) and
// calls these spaces through hpo.Architectures; this package installs
// them from init with hpo.RegisterArchitectures, so a program that imports
// it can search architectures. See docs/nas.md.
//
// It is pure: it must not import Temporal, do I/O, read the clock or use a
// global random source. Every random choice comes from the caller's rng.
package nas
