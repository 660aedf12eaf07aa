package nas

import "testing"

// Costs counted by hand from the layer lists in Cell.Cost's and
// Layers.Cost's comments.
func TestCost(t *testing.T) {
	for _, tc := range []struct {
		name          string
		arch          Architecture
		in            Shape
		classes       int
		flops, params float64
	}{
		{
			// stem conv 9·1·2·16 = 288 (18 params), BN 32 (4);
			// edge conv 9·2·2·16 = 576 (36), BN 32 (4);
			// BN 32 (4), pooling 32, dense 2·3+3 = 9 (9).
			"one conv edge", Architecture{Cell: &Cell{Nodes: 2, Edges: [][]string{{c3}}, Stacks: 1, Cells: 1, Channels: 2}},
			Shape{1, 4, 4}, 3, 288 + 32 + 576 + 32 + 32 + 32 + 9, 18 + 4 + 36 + 4 + 4 + 9,
		},
		{
			// as above, then a reduction 2→4 channels at 2×2: conv
			// 9·2·4·4 = 288 (72), BN 16 (8), conv 9·4·4·4 = 576 (144),
			// BN 16 (8), 2×2 pool 4·2·4 = 32, 1×1 conv 2·4·4 = 32 (8),
			// sum 16; a cell: conv 576 (144), BN 16 (8); BN 16 (8),
			// pooling 16, dense 4·3+3 = 15 (15).
			"two stacks", Architecture{Cell: &Cell{Nodes: 2, Edges: [][]string{{c3}}, Stacks: 2, Cells: 1, Channels: 2}},
			Shape{1, 4, 4}, 3,
			288 + 32 + 576 + 32 + (288 + 16 + 576 + 16 + 32 + 32 + 16) + 576 + 16 + 16 + 16 + 15,
			18 + 4 + 36 + 4 + (72 + 8 + 144 + 8 + 8) + 144 + 8 + 8 + 15,
		},
		{
			// odd size: the reduction halves 3×3 to 2×2 (rounding up).
			// stem 9·1·1·9 = 81 (9), BN 9 (2); cell: none; reduction 1→2:
			// conv 9·1·2·4 = 72 (18), BN 8 (4), conv 9·2·2·4 = 144 (36),
			// BN 8 (4), pool 4·1·4 = 16, 1×1 conv 1·2·4 = 8 (2), sum 8;
			// BN 8 (4), pooling 8, dense 2·1+1 = 3 (3).
			"odd size", Architecture{Cell: &Cell{Nodes: 2, Edges: [][]string{{no}}, Stacks: 2, Cells: 1, Channels: 1}},
			Shape{1, 3, 3}, 1,
			81 + 9 + (72 + 8 + 144 + 8 + 16 + 8 + 8) + 8 + 8 + 3,
			9 + 2 + (18 + 4 + 36 + 4 + 2) + 4 + 3,
		},
		{
			// stem 9·1·1·4 = 36 (9), BN 4 (2); avg pool 9·4 = 36 on 0→1;
			// node 2 = skip + max pool 36 + a sum of two, 4; BN 4 (2),
			// pooling 4, dense 1+1 = 2 (2).
			"pools and sums", Architecture{Cell: &Cell{Nodes: 3, Edges: [][]string{{avg}, {skip, mx}}, Stacks: 1, Cells: 1, Channels: 1}},
			Shape{1, 2, 2}, 1, 36 + 4 + 36 + 36 + 4 + 4 + 4 + 2, 9 + 2 + 2 + 2,
		},
		{
			// NAS-Bench-201's full-size network (3 stacks of 5 cells from
			// 16 channels, CIFAR-10): stem 27·16 + 32 = 464 params;
			// cells 6·(9C² + 2C) at C = 16, 32, 64, five each: 1,458,240;
			// reductions 14,464 + 57,600; BN 128; dense 650.
			"NB201 all conv_3x3", Architecture{Cell: &Cell{Nodes: 4, Edges: [][]string{{c3}, {c3, c3}, {c3, c3, c3}}, Stacks: 3, Cells: 5, Channels: 16}},
			Shape{3, 32, 32}, 10, -1, 1531546,
		},
		{
			"NB201 no parameters in cells", Architecture{Cell: &Cell{Nodes: 4, Edges: [][]string{{skip}, {avg, no}, {mx, skip, skip}}, Stacks: 3, Cells: 5, Channels: 16}},
			Shape{3, 32, 32}, 10, -1, 464 + 14464 + 57600 + 128 + 650,
		},
		{
			// dense 4→8: 32+8 (40); 8→8: 64+8 (72), skip 8; 8→3: 24+3 (27).
			"mlp", Architecture{Layers: &Layers{Kind: KindMLP, Layers: []Layer{ly(8, "relu", false), ly(8, "tanh", true)}}},
			Shape{1, 2, 2}, 3, 40 + 72 + 8 + 27, 40 + 72 + 27,
		},
		{
			// conv 9·1·2·4 = 72 (18), BN 8 (4); conv 9·2·2·4 = 144 (36),
			// BN 8 (4), skip 8; pooling 8; dense 2·3+3 = 9 (9).
			"cnn", Architecture{Layers: &Layers{Kind: KindCNN, Layers: []Layer{ly(2, "relu", false), ly(2, "gelu", true)}}},
			Shape{1, 2, 2}, 3, 72 + 8 + 144 + 8 + 8 + 8 + 9, 18 + 4 + 36 + 4 + 9,
		},
	} {
		flops, params := tc.arch.Cost(tc.in, tc.classes)
		if (tc.flops >= 0 && flops != tc.flops) || params != tc.params {
			t.Errorf("%s: cost %v FLOPs, %v params; want %v, %v", tc.name, flops, params, tc.flops, tc.params)
		}
	}
}

// The NAS-Bench-201 network's conv FLOPs dominate: 3 stages of 5 cells of
// 6 convs at 9·C²·H·W with C·H = 16·32, 32·16, 64·8: 212,336,640 multiply–
// adds; everything else adds under 5%.
func TestCostNB201FLOPs(t *testing.T) {
	c := Cell{Nodes: 4, Edges: [][]string{{c3}, {c3, c3}, {c3, c3, c3}}, Stacks: 3, Cells: 5, Channels: 16}
	flops, _ := c.Cost(Shape{3, 32, 32}, 10)
	const convs = 212336640.0
	if flops < convs || flops > 1.05*convs {
		t.Errorf("%v FLOPs, want a little over %v", flops, convs)
	}
}

func TestCostPanics(t *testing.T) {
	c := cell(row(c3))
	mustPanic(t, "Cost of a 0-pixel input", func() { c.Cost(Shape{1, 0, 8}, 10) })
	mustPanic(t, "Cost of 0 classes", func() { mlp(ly(8, "relu", false)).Cost(Shape{1, 8, 8}, 0) })
}
