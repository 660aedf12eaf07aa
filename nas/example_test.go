package nas_test

import (
	"fmt"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/nas"
)

// Two cells that differ only in the numbering of nodes 1 and 2 are one
// architecture: one canonical JSON, one NAS-Bench-201 string, one hash.
func ExampleCellSpace_Canonical() {
	s, err := nas.NewCellSpace(hpo.CellSpace{}) // NB201's ops, 4 nodes, 2 stacks of 1 cell, 8 channels
	if err != nil {
		panic(err)
	}
	for _, arch := range []string{
		`{"cell":{"edges":[["avg_pool_3x3"],["conv_3x3","none"],["skip_connect","conv_3x3","conv_1x1"]]}}`,
		`{"cell":{"edges":[["conv_3x3"],["avg_pool_3x3","none"],["skip_connect","conv_1x1","conv_3x3"]]}}`,
	} {
		c, err := s.Canonical(arch)
		if err != nil {
			panic(err)
		}
		a, _ := nas.Parse(c)
		fmt.Println(c)
		fmt.Println(a, nas.Hash(c))
	}
	// Output:
	// {"cell":{"nodes":4,"edges":[["conv_3x3"],["avg_pool_3x3","none"],["skip_connect","conv_1x1","conv_3x3"]],"stacks":2,"cells":1,"channels":8}}
	// |conv_3x3~0|+|avg_pool_3x3~0|none~1|+|skip_connect~0|conv_1x1~1|conv_3x3~2| 3fbff61d31d5
	// {"cell":{"nodes":4,"edges":[["conv_3x3"],["avg_pool_3x3","none"],["skip_connect","conv_1x1","conv_3x3"]],"stacks":2,"cells":1,"channels":8}}
	// |conv_3x3~0|+|avg_pool_3x3~0|none~1|+|skip_connect~0|conv_1x1~1|conv_3x3~2| 3fbff61d31d5
}

// The cost of the default cell network on 8×8 grey digits, 10 classes.
func ExampleCell_Cost() {
	a, _ := nas.Parse(`{"cell":{"nodes":4,"edges":[["conv_3x3"],["conv_3x3","conv_3x3"],["conv_3x3","conv_3x3","conv_3x3"]],"stacks":2,"cells":1,"channels":8}}`)
	flops, params := a.Cost(nas.Shape{Channels: 1, Height: 8, Width: 8}, 10)
	fmt.Printf("all conv_3x3: %.0f FLOPs, %.0f parameters\n", flops, params)
	a, _ = nas.Parse(`{"cell":{"nodes":4,"edges":[["none"],["none","none"],["skip_connect","none","none"]],"stacks":2,"cells":1,"channels":8}}`)
	flops, params = a.Cost(nas.Shape{Channels: 1, Height: 8, Width: 8}, 10)
	fmt.Printf("one skip: %.0f FLOPs, %.0f parameters\n", flops, params)
	// Output:
	// all conv_3x3: 513706 FLOPs, 21506 parameters
	// one skip: 64426 FLOPs, 3938 parameters
}

// The neighbours of a two-layer MLP: each layer's width or activation
// changed, the skip toggled, a layer removed (two already is max_depth).
func ExampleLayerSpace_Neighbors() {
	s, err := nas.NewLayerSpace(hpo.LayerSpace{MaxDepth: 2, Widths: []int{16, 32}, Activations: []string{"relu", "tanh"}, Skip: true})
	if err != nil {
		panic(err)
	}
	arch, err := s.Canonical(`{"layers":{"layers":[{"width":32,"activation":"relu"},{"width":32,"activation":"relu"}]}}`)
	if err != nil {
		panic(err)
	}
	for _, n := range s.Neighbors(arch) {
		a, _ := nas.Parse(n)
		fmt.Println(a)
	}
	// Output:
	// mlp[16 relu, 32 relu]
	// mlp[32 relu, 16 relu]
	// mlp[32 relu, 32 relu skip]
	// mlp[32 relu, 32 tanh]
	// mlp[32 relu]
	// mlp[32 tanh, 32 relu]
}
