package nas

import "fmt"

// Shape is a trainer's input sample: channels × height × width (an mlp
// reads it flattened, as Channels·Height·Width features).
type Shape struct {
	Channels, Height, Width int
}

// Cost conventions (docs/nas.md), for one sample's forward pass: a
// multiply–add counts one FLOP, as NAS-Bench-201 counts them; a k×k
// convolution from Cin to Cout channels on an Ho×Wo output costs
// k²·Cin·Cout·Ho·Wo, a dense layer In·Out plus Out for its bias; batch
// norm one per element (an affine map at inference); a k×k pool k² per
// output element, global average pooling one per input element; a sum of
// m tensors m−1 per element. Activations, identities and none edges cost
// nothing. Parameters are the trainable weights: conv kernels (no biases:
// every conv but the reduction's shortcut is followed by batch norm),
// batch norm's scale and shift (2 per channel; running statistics are
// buffers), dense weights and biases.

// counter adds up FLOPs and parameters layer by layer.
type counter struct{ flops, params float64 }

func (k *counter) conv(size, cin, cout, h, w int) {
	k.flops += float64(size*size) * float64(cin) * float64(cout) * float64(h) * float64(w)
	k.params += float64(size*size) * float64(cin) * float64(cout)
}

func (k *counter) bn(c, h, w int) {
	k.flops += float64(c) * float64(h) * float64(w)
	k.params += 2 * float64(c)
}

func (k *counter) elementwise(per float64, c, h, w int) {
	k.flops += per * float64(c) * float64(h) * float64(w)
}

func (k *counter) dense(in, out int) {
	k.flops += float64(in)*float64(out) + float64(out)
	k.params += float64(in)*float64(out) + float64(out)
}

func checkShape(in Shape, classes int) {
	if in.Channels < 1 || in.Height < 1 || in.Width < 1 || classes < 1 {
		panic(fmt.Sprintf("nas: Cost of input %+v and %d classes: every size must be ≥ 1", in, classes))
	}
}

// Cost returns the FLOPs of one sample's forward pass and the parameter
// count of the network built from c as it is (a canonical cell has no
// dead edges), for inputs of shape in and classes outputs. The network:
//
//	stem: 3×3 conv in.Channels→C, BN
//	stage 1: Cells cells at C channels
//	stage s > 1: reduction block C→2C (NAS-Bench-201's ResNet basic
//	  block: ReLU, 3×3 conv stride 2, BN; ReLU, 3×3 conv, BN; shortcut
//	  2×2 average pool stride 2 (ceil mode) and 1×1 conv; the sum), the
//	  resolution halved rounding up; then Cells cells at 2C channels
//	BN, ReLU, global average pooling, dense layer to the classes.
//
// A conv edge is ReLU, conv, BN at the stage's channels (stride 1, padding
// keeping the size); each node sums its edges. Sizes must be ≥ 1.
func (c Cell) Cost(in Shape, classes int) (flops, params float64) {
	checkShape(in, classes)
	var k counter
	ch, h, w := c.Channels, in.Height, in.Width
	k.conv(3, in.Channels, ch, h, w)
	k.bn(ch, h, w)
	for s := range c.Stacks {
		if s > 0 {
			h2, w2 := (h+1)/2, (w+1)/2
			k.conv(3, ch, 2*ch, h2, w2)
			k.bn(2*ch, h2, w2)
			k.conv(3, 2*ch, 2*ch, h2, w2)
			k.bn(2*ch, h2, w2)
			k.elementwise(4, ch, h2, w2) // 2×2 average pool
			k.conv(1, ch, 2*ch, h2, w2)
			k.elementwise(1, 2*ch, h2, w2) // residual sum
			ch, h, w = 2*ch, h2, w2
		}
		for range c.Cells {
			c.cellCost(&k, ch, h, w)
		}
	}
	k.bn(ch, h, w)
	k.elementwise(1, ch, h, w) // global average pooling
	k.dense(ch, classes)
	return k.flops, k.params
}

func (c Cell) cellCost(k *counter, ch, h, w int) {
	for _, row := range c.Edges {
		inputs := 0
		for _, op := range row {
			switch op {
			case OpConv1x1:
				k.conv(1, ch, ch, h, w)
				k.bn(ch, h, w)
			case OpConv3x3:
				k.conv(3, ch, ch, h, w)
				k.bn(ch, h, w)
			case OpAvgPool3x3, OpMaxPool3x3:
				k.elementwise(9, ch, h, w)
			}
			if op != OpNone {
				inputs++
			}
		}
		if inputs > 1 {
			k.elementwise(float64(inputs-1), ch, h, w)
		}
	}
}

// Cost returns the FLOPs of one sample's forward pass and the parameter
// count of l for inputs of shape in and classes outputs (conventions as
// for Cell.Cost). An mlp's first layer reads Channels·Height·Width
// features; a cnn keeps the height and width through its layers.
func (l Layers) Cost(in Shape, classes int) (flops, params float64) {
	checkShape(in, classes)
	var k counter
	if l.Kind == KindCNN {
		prev := in.Channels
		for _, y := range l.Layers {
			k.conv(3, prev, y.Width, in.Height, in.Width)
			k.bn(y.Width, in.Height, in.Width)
			if y.Skip {
				k.elementwise(1, y.Width, in.Height, in.Width)
			}
			prev = y.Width
		}
		k.elementwise(1, prev, in.Height, in.Width) // global average pooling
		k.dense(prev, classes)
		return k.flops, k.params
	}
	prev := in.Channels * in.Height * in.Width
	for _, y := range l.Layers {
		k.dense(prev, y.Width)
		if y.Skip {
			k.flops += float64(y.Width)
		}
		prev = y.Width
	}
	k.dense(prev, classes)
	return k.flops, k.params
}

// Cost returns the cost of a's network (Cell.Cost, Layers.Cost).
func (a Architecture) Cost(in Shape, classes int) (flops, params float64) {
	switch {
	case a.Cell != nil:
		return a.Cell.Cost(in, classes)
	case a.Layers != nil:
		return a.Layers.Cost(in, classes)
	}
	panic("nas: Cost of an empty architecture")
}
