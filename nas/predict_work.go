package nas

// Work is what one training step of a cell network asks of the machine,
// split as DeletePop splits a step (He et al., "DeletePop: A DLT
// Execution Time Predictor Based on Comprehensive Modeling", ICA3PP 2023):
// computation (FLOPs), memory access (activation bytes) and the operators
// themselves (each one a kernel launch, and on a CPU a trip through the
// framework's dispatcher, whatever its size). Counts are of the forward
// pass, as the trainer (examples/pytorch-nas/train.py) builds it; the
// backward pass and the optimiser are proportional to them and the
// fitted coefficients absorb the ratio.
type Work struct {
	// MACFLOPs are the multiply–adds of one sample's convolutions and
	// dense layer; OtherFLOPs the rest Cost counts (batch norm, pools,
	// sums, global pooling, the dense layer's bias). Their sum is Cost's
	// FLOPs.
	MACFLOPs, OtherFLOPs float64
	// Bytes are the activation bytes one sample's forward pass reads and
	// writes (float32), operator by operator: what makes a ReLU, a pool
	// or a sum cost time though Cost counts few or no FLOPs for it. An
	// identity (skip_connect) moves nothing.
	Bytes float64
	// Kernels are the operators a forward pass runs, whatever the batch:
	// each conv, batch norm, ReLU, pool, sum of two tensors and the dense
	// layer is one; views (flatten) and identities none.
	Kernels int
	// ParamTensors are the trainable tensors (a conv's kernel, a batch
	// norm's scale and shift, the dense layer's weight and bias): the
	// optimiser and the gradient all-reduce handle each.
	ParamTensors int
	// Params are the trainable parameters (Cost's).
	Params float64
}

// work adds up a network's Work operator by operator.
type work struct{ Work }

const bytesPerElement = 4 // float32

func (k *work) conv(size, cin, cout, hi, wi, ho, wo int) {
	k.MACFLOPs += float64(size*size) * float64(cin) * float64(cout) * float64(ho) * float64(wo)
	k.Params += float64(size*size) * float64(cin) * float64(cout)
	k.ParamTensors++
	k.Kernels++
	k.Bytes += bytesPerElement * (float64(cin)*float64(hi)*float64(wi) + float64(cout)*float64(ho)*float64(wo))
}

func (k *work) bn(c, h, w int) {
	k.OtherFLOPs += float64(c) * float64(h) * float64(w)
	k.Params += 2 * float64(c)
	k.ParamTensors += 2
	k.Kernels++
	k.Bytes += bytesPerElement * 2 * float64(c) * float64(h) * float64(w)
}

// elementwise is an operator without parameters reading in tensors of
// c×hi×wi and writing one of c×ho×wo, costing flops per output element.
func (k *work) elementwise(flops float64, in, c, hi, wi, ho, wo int) {
	k.OtherFLOPs += flops * float64(c) * float64(ho) * float64(wo)
	k.Kernels++
	k.Bytes += bytesPerElement * float64(c) * (float64(in)*float64(hi)*float64(wi) + float64(ho)*float64(wo))
}

func (k *work) relu(c, h, w int) { k.elementwise(0, 1, c, h, w, h, w) }

// sum is node = node + y: one kernel per tensor added.
func (k *work) sum(c, h, w int) { k.elementwise(1, 2, c, h, w, h, w) }

func (k *work) reluConvBN(size, cin, cout, hi, wi, ho, wo int) {
	k.relu(cin, hi, wi)
	k.conv(size, cin, cout, hi, wi, ho, wo)
	k.bn(cout, ho, wo)
}

// Work returns what one training step of c's network does, for inputs of
// shape in and classes outputs: the network Cost describes, operator by
// operator as examples/pytorch-nas builds it. c should be canonical (its
// dead edges pruned, as the trainer prunes them); a cell whose output is
// unreachable costs one kernel (the trainer multiplies its input by 0).
// Sizes must be ≥ 1.
func (c Cell) Work(in Shape, classes int) Work {
	checkShape(in, classes)
	var k work
	ch, h, w := c.Channels, in.Height, in.Width
	k.conv(3, in.Channels, ch, h, w, h, w)
	k.bn(ch, h, w)
	for s := range c.Stacks {
		if s > 0 {
			h2, w2 := (h+1)/2, (w+1)/2
			k.reluConvBN(3, ch, 2*ch, h, w, h2, w2)
			k.reluConvBN(3, 2*ch, 2*ch, h2, w2, h2, w2)
			k.elementwise(4, 1, ch, h, w, h2, w2) // 2×2 average pool, stride 2
			k.conv(1, ch, 2*ch, h2, w2, h2, w2)
			k.sum(2*ch, h2, w2)
			ch, h, w = 2*ch, h2, w2
		}
		for range c.Cells {
			c.cellWork(&k, ch, h, w)
		}
	}
	k.bn(ch, h, w)
	k.relu(ch, h, w)
	// global average pooling, one FLOP per input element
	k.elementwise(0, 1, ch, h, w, 1, 1)
	k.OtherFLOPs += float64(ch) * float64(h) * float64(w)
	k.MACFLOPs += float64(ch) * float64(classes)
	k.OtherFLOPs += float64(classes) // the bias
	k.Params += float64(ch)*float64(classes) + float64(classes)
	k.ParamTensors += 2
	k.Kernels++
	k.Bytes += bytesPerElement * float64(ch+classes)
	return k.Work
}

func (c Cell) cellWork(k *work, ch, h, w int) {
	edges := 0
	for _, row := range c.Edges {
		inputs := 0
		for _, op := range row {
			switch op {
			case OpConv1x1:
				k.reluConvBN(1, ch, ch, h, w, h, w)
			case OpConv3x3:
				k.reluConvBN(3, ch, ch, h, w, h, w)
			case OpAvgPool3x3, OpMaxPool3x3:
				k.elementwise(9, 1, ch, h, w, h, w)
			}
			if op != OpNone {
				inputs++
			}
		}
		for range inputs - 1 {
			k.sum(ch, h, w)
		}
		edges += inputs
	}
	if edges == 0 { // the output unreachable: x·0
		k.elementwise(0, 1, ch, h, w, h, w)
	}
}
