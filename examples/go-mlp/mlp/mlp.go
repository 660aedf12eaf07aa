// Package mlp is Gleaner's example Go trainer, the command go-mlp
// (examples/go-mlp) and the trainer built into the gleaner binary for
// `gleaner dev` (`gleaner example-trainer`): a small multilayer perceptron
// classifying interleaved 2-D spirals it generates itself, trained by
// minibatch SGD with momentum, data-parallel over GLEANER_NODES workers.
// The network is one tanh layer of `hidden` units, or, given an `arch`
// parameter (a layer-stack architecture of kind mlp, docs/nas.md), that
// stack of dense layers, each with its activation and, where asked, a
// residual connection; then its reports carry its weight count as the
// metric params (nas.yaml searches such stacks). It speaks the trial
// protocol (docs/protocol.md) through package trial: parameters from the
// params file, progress and metrics to the report file, a checkpoint
// every checkpoint_every steps and on SIGTERM, exact resumption from
// GLEANER_RESUME_FROM. With a budget (GLEANER_BUDGET in
// GLEANER_BUDGET_UNIT) it trains until its samples, step or epoch counter
// reaches the budget instead of for steps or epochs, then checkpoints,
// reports and exits 0, as on SIGTERM.
//
// On a run of several hosts (GLEANER_NUM_HOSTS > 1) there is one go-mlp
// per host, running that host's GLEANER_LOCAL_NODES workers; the processes
// sum their gradients every step through a small TCP all-reduce
// (allreduce.go) at GLEANER_MASTER_ADDR:GLEANER_MASTER_PORT, where host
// rank 0 listens. Host rank 0 reports and checkpoints. Every host first
// writes one line about the rendezvous to its own GLEANER_REPORT_FILE.
//
// Exit status (Main): 0 when the budget is done or after a graceful stop;
// 1 for a bad environment or checkpoint; 2 for bad parameters; 3 for the
// test-only fail_at_step; 4 when another host failed or could not be
// reached.
package mlp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/gleaner-hpc/gleaner/trial"
)

const (
	exitOK       = 0
	exitEnv      = 1
	exitParams   = 2
	exitInjected = 3
	exitPeers    = 4

	dataDim    = 2 // the spirals lie in the plane
	classes    = 3
	perClass   = 1000 // spiral points per class
	valSize    = 600
	dataSeed   = 7 // the data set is the same for every trial
	keepCkpts  = 2
	ckptSuffix = ".gob"

	// joinTimeout is how long the hosts have to meet (their agents start
	// them independently); hostTimeout how long an all-reduce may wait on
	// the slowest host, rank 0's evaluation and checkpoint writing included.
	joinTimeout = 2 * time.Minute
	hostTimeout = 2 * time.Minute
)

// Main runs one trial as the trial protocol's environment describes it,
// writing its diagnostics to log, and returns the process's exit status.
// It takes SIGTERM over (a stop at a checkpoint), so it is the whole of a
// process's work.
func Main(log io.Writer) int {
	stop := trial.Stopping() // before anything slow, so SIGTERM never kills us mid-write
	env, err := trial.LoadEnv()
	if err != nil {
		fmt.Fprintln(log, "go-mlp:", err)
		return exitEnv
	}
	rv, err := trial.LoadRendezvous()
	if err != nil {
		fmt.Fprintln(log, "go-mlp:", err)
		return exitEnv
	}
	return run(env, rv, stop, log)
}

func run(env trial.Env, rv trial.Rendezvous, stop <-chan struct{}, log io.Writer) int {
	h := defaultHyper()
	if err := env.DecodeParams(&h); err != nil {
		fmt.Fprintln(log, "go-mlp:", err)
		return exitParams
	}
	if err := h.validate(); err != nil {
		fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvParamsFile, err)
		return exitParams
	}

	all := spiral(classes, perClass, 0.2, dataSeed) // dataDim wide
	train, val := all.splitAt(all.len()-valSize, dataSeed)
	model, err := h.network(dataDim, classes)
	if err != nil { // validate checked it
		fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvParamsFile, err)
		return exitParams
	}
	span := allNodes(env.Nodes)
	if rv.MultiHost() {
		span = nodeSpan{total: rv.Nodes, first: rv.NodeOffset, count: rv.LocalNodes}
	}
	tr := newTrainer(model, train, float64(h.LR), float64(h.Momentum), h.Batch.Int(), span, uint64(h.Seed))
	steps := h.budget(train.len()) // without a campaign's budget

	// Every host resumes from the same checkpoint (shared storage), before
	// joining: rank 0 deletes old checkpoints only after later steps, which
	// need every host.
	var step, samples int64
	if env.Resuming() {
		var s *state
		err := trial.LoadCheckpoint(env.ResumeFrom, func(r io.Reader) (err error) {
			s, err = decodeState(r)
			return err
		})
		if err == nil {
			err = tr.restore(s)
		}
		if err != nil {
			fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvResumeFrom, err)
			return exitEnv
		}
		step, samples = s.Step, s.Samples
	}

	var hosts *hostGroup
	if rv.MultiHost() {
		var err error
		if hosts, err = joinHosts(rv, stop); errors.Is(err, errStopped) {
			fmt.Fprintln(log, "go-mlp: stopped before the hosts met; the last checkpoint stands")
			return exitOK
		} else if err != nil {
			fmt.Fprintf(log, "go-mlp: host %d of %d: %v\n", rv.NodeRank, rv.NumHosts, err)
			return exitPeers
		}
		defer hosts.close()
	}
	// A first all-reduce checks the layout and proves the hosts meet: the
	// sum over all nodes of their index + 1, and the node count.
	check := []float64{0, float64(rv.LocalNodes)}
	for n := rv.NodeOffset; n < rv.NodeOffset+rv.LocalNodes; n++ {
		check[0] += float64(n + 1)
	}
	if hosts != nil {
		if err := hosts.allReduce(check); err != nil {
			fmt.Fprintf(log, "go-mlp: host %d of %d: %v\n", rv.NodeRank, rv.NumHosts, err)
			return exitPeers
		}
	}
	if int(check[1]) != rv.Nodes {
		fmt.Fprintf(log, "go-mlp: %s: the hosts' %s add up to %v, not %s=%d\n", trial.EnvLocalNodes, trial.EnvLocalNodes, check[1], trial.EnvNodes, rv.Nodes)
		return exitEnv
	}
	if err := writeRendezvousLine(env.ReportFile, rv, check[0], samples, step); err != nil {
		fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvReportFile, err)
		return exitEnv
	}

	leader := rv.NodeRank == 0 // reports and checkpoints
	var rep *trial.Reporter
	if leader {
		var err error
		if rep, err = env.Reporter(); err != nil {
			fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvReportFile, err)
			return exitEnv
		}
		defer rep.Close()
	}
	garbage := garbageWriter{path: env.ReportFile}

	// The run ends at the campaign's budget when it gives one (every host
	// has the same counters, so all end after the same step), else after
	// the trainer's own steps.
	budgeted := env.Budget > 0 && !h.IgnoreBudget
	epoch := func() float64 { return float64(samples) / float64(train.len()) }
	ended := func() bool {
		if budgeted {
			return env.BudgetReached(float64(samples), step, epoch())
		}
		return step >= steps
	}
	end, done := fmt.Sprintf("step %d", steps), "done"
	if budgeted {
		end, done = fmt.Sprintf("%g %s", env.Budget, env.BudgetUnit), "budget reached"
	}
	fmt.Fprintf(log, "go-mlp: trial %q on %d node(s) %v, host %d of %d (%s) with nodes %d..%d: %s, batch %d, lr %g, step %d → %s\n",
		env.TrialID, env.Nodes, env.Hosts, rv.NodeRank, rv.NumHosts, rv.HostAddr, span.first, span.first+span.count-1,
		model.describe(), tr.batch, float64(h.LR), step, end)

	progress := func(checkpoint string, trainLoss float64) trial.Report {
		valLoss, acc := model.evaluate(tr.weights, val)
		m := map[string]float64{"val_loss": valLoss, "accuracy": acc}
		if model.arch != "" { // as examples/pytorch-nas does: the leaderboard's size column
			m["params"] = float64(model.size())
		}
		if trainLoss >= 0 {
			m["loss"] = trainLoss
		}
		return trial.Report{
			Samples: float64(samples), Step: step, Epoch: epoch(),
			Metrics: m, Checkpoint: checkpoint,
		}
	}
	checkpoint := func(trainLoss float64) error {
		if !leader {
			return nil
		}
		path, err := env.SaveCheckpoint(trial.CheckpointName(step, ckptSuffix), tr.snapshot(step, samples).encode)
		if err != nil {
			return err
		}
		if err := rep.Report(progress(path, trainLoss)); err != nil {
			return err
		}
		// Only now, with the new checkpoint reported, may older ones go.
		return trial.PruneCheckpoints(env.CheckpointDir, "step-*"+ckptSuffix, keepCkpts)
	}
	stopped := func() bool {
		if h.IgnoreSigterm {
			return false
		}
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	// On several hosts the stop flag rides on every step's all-reduce, so
	// all hosts stop after the same step; the last all-reduce, after rank
	// 0's checkpoint, lets no host exit 0 before that checkpoint exists.
	var reduce func([]float64) error
	var stopAgreed bool
	if hosts != nil {
		reduce = func(v []float64) error {
			v[len(v)-1] = 0
			if stopped() {
				v[len(v)-1] = 1
			}
			err := hosts.allReduce(v)
			stopAgreed = v[len(v)-1] > 0
			return err
		}
	}
	finish := func(what string, trainLoss float64) int {
		if err := checkpoint(trainLoss); err != nil {
			fmt.Fprintf(log, "go-mlp: %s checkpoint: %v\n", what, err)
			return exitEnv
		}
		if hosts != nil {
			if err := hosts.allReduce([]float64{0}); err != nil {
				fmt.Fprintf(log, "go-mlp: host %d of %d: after the %s checkpoint: %v\n", rv.NodeRank, rv.NumHosts, what, err)
				return exitPeers
			}
		}
		fmt.Fprintf(log, "go-mlp: %s at step %d, checkpoint written\n", what, step)
		return exitOK
	}

	var lossSum float64
	var lossN int
	meanLoss := func() float64 {
		if lossN == 0 {
			return -1
		}
		l := lossSum / float64(lossN)
		lossSum, lossN = 0, 0
		return l
	}
	for !ended() {
		if hosts == nil && stopped() {
			return finish("stopped", meanLoss())
		}
		loss, err := tr.step(reduce)
		if err != nil {
			fmt.Fprintf(log, "go-mlp: host %d of %d: step %d: %v\n", rv.NodeRank, rv.NumHosts, step+1, err)
			return exitPeers
		}
		lossSum += loss
		lossN++
		step++
		samples += int64(tr.batch)

		if h.FailAtStep > 0 && step == int64(h.FailAtStep) && !env.Resuming() {
			fmt.Fprintf(log, "go-mlp: failing at step %d as fail_at_step asks\n", step)
			return exitInjected
		}
		if stopAgreed {
			return finish("stopped", meanLoss())
		}
		if step%int64(h.CheckpointEvery) == 0 && !ended() {
			if err := checkpoint(meanLoss()); err != nil {
				fmt.Fprintln(log, "go-mlp: checkpoint:", err)
				return exitEnv
			}
		} else if leader && step%int64(h.ReportEvery) == 0 && !ended() {
			if h.GarbageReports {
				garbage.write()
			}
			if err := rep.Report(progress("", meanLoss())); err != nil {
				fmt.Fprintln(log, "go-mlp:", err)
				return exitEnv
			}
		}
		if h.StepMS > 0 {
			cut := stop
			if h.IgnoreSigterm {
				cut = nil // a trainer that ignores SIGTERM keeps its pace too
			}
			select { // a stop cuts the sleep short
			case <-cut:
			case <-time.After(time.Duration(float64(h.StepMS) * float64(time.Millisecond))):
			}
		}
	}
	return finish(done, meanLoss()) // the last report carries the final checkpoint and metrics
}

// joinHosts meets the other hosts' trainers at the master address.
func joinHosts(rv trial.Rendezvous, stop <-chan struct{}) (*hostGroup, error) {
	if rv.NodeRank != 0 {
		return dialGroup(rv.MasterHostPort(), rv.NodeRank, rv.NumHosts, joinTimeout, hostTimeout, stop)
	}
	// Every interface, as torch's store does: the master address may be
	// one that routes here without being this host's own (NAT).
	l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(rv.MasterPort)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", trial.EnvMasterPort, err)
	}
	defer l.Close()
	return serveGroup(l, rv.NumHosts, joinTimeout, hostTimeout, stop)
}

// rendezvousLine is the line every host writes first to its own report
// file: where it stood, and the first all-reduce's result (the sum over
// all nodes of index + 1: world×(world+1)/2 when every host took part). The
// reader ignores the rendezvous member; samples and step are those the
// run starts from, so on rank 0 it is also a true progress line.
type rendezvousLine struct {
	Samples    float64        `json:"samples"`
	Step       int64          `json:"step"`
	Time       float64        `json:"time"`
	Rendezvous rendezvousInfo `json:"rendezvous"`
}

type rendezvousInfo struct {
	NodeRank   int     `json:"node_rank"`
	NumHosts   int     `json:"num_hosts"`
	HostAddr   string  `json:"host_addr"`
	WorldSize  int     `json:"world_size"`
	LocalNodes int     `json:"local_nodes"`
	NodeOffset int     `json:"node_offset"`
	AllReduce  float64 `json:"allreduce"`
}

func writeRendezvousLine(path string, rv trial.Rendezvous, allReduce float64, samples, step int64) error {
	line, err := json.Marshal(rendezvousLine{
		Samples: float64(samples), Step: step, Time: float64(time.Now().UnixNano()) / 1e9,
		Rendezvous: rendezvousInfo{
			NodeRank: rv.NodeRank, NumHosts: rv.NumHosts, HostAddr: rv.HostAddr, WorldSize: rv.Nodes,
			LocalNodes: rv.LocalNodes, NodeOffset: rv.NodeOffset, AllReduce: allReduce,
		},
	})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil { // one write: O_APPEND keeps it whole
		f.Close()
		return err
	}
	return f.Close()
}

// garbageWriter appends malformed lines for the garbage_reports test mode:
// the reader must count and skip them.
type garbageWriter struct {
	path string
	n    int
}

func (g *garbageWriter) write() {
	lines := []string{
		"this is not json",
		`{"samples": -5, "step": 1}`,
		`{"step": "ten", "metrics": {"loss": 1}}`,
		`[1, 2, 3]`,
		`{"samples": 1, "metrics": {"loss": NaN}}`,
		`{"step": 3`,
		string(make([]byte, trial.MaxReportLine+10)), // NULs, over the line limit
	}
	f, err := os.OpenFile(g.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write([]byte(lines[g.n%len(lines)] + "\n"))
	g.n++
}
