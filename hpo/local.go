package hpo

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// AlgorithmLocal names local search.
const AlgorithmLocal = "local"

// LocalSettings configure search.local. A zero value takes its default.
type LocalSettings struct {
	// Step is how far a number's neighbours lie, as a fraction of its
	// (log) range (default 0.1): a float's are its value ± step, an
	// integer's the integers there (at least ± 1).
	Step float64 `json:"step,omitempty"`
	// MaxVisited bounds the points remembered as proposed, so that none is
	// proposed twice (default 10,000): each costs 8 bytes of the snapshot
	// (about 11 as its base64), so 10,000 take 107 KB; past it the oldest
	// are forgotten and may be proposed again.
	MaxVisited int `json:"max_visited,omitempty"`
}

const (
	defaultStep       = 0.1
	defaultMaxVisited = 10_000
	// maxMaxVisited keeps the visited set under 512 KB of snapshot.
	maxMaxVisited = 40_000
	// restartTries bounds the random samples drawn for a restart before
	// one already visited is taken (a small space, explored).
	restartTries = 100
)

// Validate checks the settings; errors name the field.
func (s *LocalSettings) Validate() error {
	switch {
	case s.Step != 0 && !(s.Step > 0 && s.Step <= 0.5):
		return fmt.Errorf("step: %v must be in (0, 0.5] (0 is the default, %v)", s.Step, defaultStep)
	case s.MaxVisited < 0 || s.MaxVisited > maxMaxVisited:
		return fmt.Errorf("max_visited: %d must be in 1..%d (0 is the default, %d)", s.MaxVisited, maxMaxVisited, defaultMaxVisited)
	}
	return nil
}

func init() {
	register(algorithm{
		name:        AlgorithmLocal,
		creates:     true,
		conditional: true,
		summary:     "local search (White et al. 2020): from a random point, try its neighbours (an architecture's one edit away, the other choices, numbers ± step) in random order; move to one that improves; restart at random from a local optimum",
		section:     func(s Settings) (validator, bool) { return s.Local, s.Local != nil },
		new:         func(cfg Config) (Searcher, error) { return newLocal(cfg), nil },
	})
}

// local is local search, hill climbing with random restarts, after C.
// White, S. Nolen, Y. Savani, "Local Search is State of the Art for Neural
// Architecture Search Benchmarks" (arXiv:2005.02960, 2020; UAI 2021 as
// "Exploring the Loss Landscape in Neural Architecture Search"). A climb
// keeps a centre, its best point so far, and proposes the centre's
// neighbours (every point one move away) in random order as slots free
// up, skipping points already proposed. Their Algorithm 1 evaluates the
// whole neighbourhood and moves to the best neighbour if it beats the
// centre; this moves at the first neighbour that does (their code's
// query_full_nbhd=False), because a campaign runs trials in parallel and
// finishing a neighbourhood would hold slots on its slowest trials at
// every step:
//
//   - a trial of the current climb that finishes better than the centre
//     becomes the centre, and its neighbours are proposed next. The old
//     centre's neighbours still running still count: one that beats the
//     new centre moves the climb again;
//   - the climb's first point is a random sample; until one has finished,
//     free slots take more, and the best that finishes leads;
//   - a local optimum — every neighbour of the centre proposed and ended,
//     none better — ends the climb. While its last trials run, free slots
//     take random samples for the next climb, whose best result is its
//     first centre; a climb starting without one starts from a sample.
//
// Neighbours: an architecture's are Architectures.Neighbors (one edit
// away); a choice's, the other choices; a number's, the values Step of
// its (log) range below and above (toUnit's coordinates; clamped to the
// range, integers moved at least one). Numbers thus move on a lattice of
// Step around the climb's random start, which a restart shifts: local
// search refines a float to about Step of its range, no finer.
//
// Ranking is evolution's (result): a stopped trial ranks below a
// completed one, and a failed one, or one without a metric, never leads.
// Points are remembered as proposed (a hash of their canonical values,
// FNV-1a 64, so a collision, about n²/2⁶⁵ for n points, merely skips a
// point) up to MaxVisited, the oldest forgotten first; a random restart
// draws up to 100 samples for one not visited. The snapshot holds the
// centre, its unproposed moves, the outstanding trials and the visited
// hashes: bounded at any campaign length.
type local struct {
	cfg        Config
	step       float64
	maxVisited int
	archs      []Architectures // per dimension, for architectures
	pcg        *rand.PCG
	rng        *rand.Rand
	st         localState
	// visited are st.Visited's hashes, oldest first, and seen the same as a
	// set; rebuilt by Restore.
	visited []uint64
	seen    map[uint64]bool
}

// localState is all local search remembers; with the RNG state and the
// visited hashes it is the snapshot.
type localState struct {
	// RNG is the PCG's binary state (rand.PCG.MarshalBinary).
	RNG []byte `json:"rng"`
	window
	// Climb numbers the climbs from 0; a trial belongs to the climb it was
	// proposed for, the current one or the next.
	Climb int `json:"climb"`
	// Center is the current climb's best point, nil until one has finished.
	Center *member `json:"center,omitempty"`
	// Moves are the centre's neighbours not yet proposed, in proposal
	// order.
	Moves []localMove `json:"moves,omitempty"`
	// Next is the best finished trial proposed for the next climb.
	Next *member `json:"next,omitempty"`
	// Pending are the outstanding trials, in the order of
	// window.Outstanding.
	Pending []localTrial `json:"pending,omitempty"`
	// Visited are the hashes of the points proposed, oldest first, 8 bytes
	// each (big-endian), at most max_visited.
	Visited []byte `json:"visited,omitempty"`
}

// localMove is a neighbour of the centre: the centre with dimension Dim
// set to Value.
type localMove struct {
	Dim   int   `json:"dim"`
	Value Value `json:"value"`
}

// localTrial is an outstanding trial: its parameters and climb.
type localTrial struct {
	Params Params `json:"params"`
	Climb  int    `json:"climb"`
}

func newLocal(cfg Config) *local {
	pcg := newPCG(cfg.Seed)
	l := &local{cfg: cfg, step: defaultStep, maxVisited: defaultMaxVisited, archs: spaceArchs(cfg.Space),
		pcg: pcg, rng: rand.New(pcg), seen: map[uint64]bool{}}
	if s := cfg.Settings.Local; s != nil {
		if s.Step != 0 {
			l.step = s.Step
		}
		if s.MaxVisited != 0 {
			l.maxVisited = s.MaxVisited
		}
	}
	return l
}

func (l *local) Initial() []Action { return l.fill() }

func (l *local) TrialCreated(string) []Action { return nil }

func (l *local) TrialReported(string, float64, float64) []Action { return nil }

func (l *local) TrialFinished(id string, metric float64, o Outcome) []Action {
	return l.end(id, metric, o == OutcomeStopped)
}

func (l *local) TrialFailed(id string) []Action { return l.end(id, math.NaN(), false) }

func (l *local) end(id string, metric float64, stopped bool) []Action {
	i := slices.Index(l.st.Outstanding, id)
	if i < 0 {
		return nil
	}
	tr := l.st.Pending[i]
	l.st.Pending = slices.Delete(l.st.Pending, i, i+1)
	l.st.window.end(id)
	if r, ok := newResult(metric, stopped); ok {
		m := &member{Trial: id, Params: tr.Params, result: r}
		switch tr.Climb {
		case l.st.Climb:
			if l.st.Center == nil || r.beats(l.st.Center.result, l.cfg.Mode) {
				l.moveTo(m)
			}
		case l.st.Climb + 1:
			if l.st.Next == nil || r.beats(l.st.Next.result, l.cfg.Mode) {
				l.st.Next = m
			}
		}
	}
	for l.st.Center != nil && len(l.st.Moves) == 0 && !l.open(l.st.Climb) {
		l.restart() // a local optimum
	}
	return l.fill()
}

// moveTo makes m the centre and queues its neighbours, shuffled.
func (l *local) moveTo(m *member) {
	l.st.Center = m
	l.st.Moves = l.moves(m.Params)
	l.rng.Shuffle(len(l.st.Moves), func(i, j int) { l.st.Moves[i], l.st.Moves[j] = l.st.Moves[j], l.st.Moves[i] })
}

// restart ends the climb: the next starts from the best result proposed
// for it, if any.
func (l *local) restart() {
	l.st.Climb++
	next := l.st.Next
	l.st.Center, l.st.Moves, l.st.Next = nil, nil, nil
	if next != nil {
		l.moveTo(next)
	}
}

// open reports whether a trial of climb c is outstanding.
func (l *local) open(c int) bool {
	return slices.ContainsFunc(l.st.Pending, func(tr localTrial) bool { return tr.Climb == c })
}

func (l *local) fill() []Action {
	return l.st.fill(l.cfg, l.next, func(p Params) { l.propose(p, l.st.Climb) })
}

// next returns the next trial's parameters: the centre's next neighbour
// not visited (nor forbidden); with none left, a random sample for the
// next climb while this one's trials run, or, the climb over, the next
// climb's first. False when forbidden clauses left nothing to sample.
func (l *local) next(int) (Params, bool) {
	for {
		c := l.st.Center
		if c == nil {
			p, ok := l.random()
			return l.propose(p, l.st.Climb), ok
		}
		for len(l.st.Moves) > 0 {
			m := l.st.Moves[0]
			l.st.Moves = l.st.Moves[1:]
			p := l.move(c.Params, m)
			if !l.seen[l.hash(p)] && Allowed(l.cfg.Space, l.cfg.Forbidden, p) {
				return l.propose(p, l.st.Climb), true
			}
		}
		if l.open(l.st.Climb) {
			p, ok := l.random()
			return l.propose(p, l.st.Climb+1), ok
		}
		l.restart()
	}
}

// move is centre with move m made. In a conditional space a parent's
// move may switch children on or off: those it activates are drawn as
// Sample draws them, those it deactivates dropped (Space.Complete), so a
// parent's neighbour is one point of the children's new subspace.
func (l *local) move(center Params, m localMove) Params {
	p := maps.Clone(center)
	p[l.cfg.Space[m.Dim].Name] = m.Value
	if l.cfg.Space.Conditional() {
		return l.cfg.Space.Complete(l.rng, p)
	}
	return p
}

// propose records p as proposed for climb c and returns it (nil: nothing).
func (l *local) propose(p Params, c int) Params {
	if p == nil {
		return nil
	}
	l.visit(l.hash(p))
	l.st.Pending = append(l.st.Pending, localTrial{Params: p, Climb: c})
	return p
}

// random samples the space, preferring a point not visited; false (and
// nil) when forbidden clauses left nothing to sample.
func (l *local) random() (Params, bool) {
	var p Params
	for range restartTries {
		var err error
		if p, err = l.cfg.Space.SampleAllowed(l.rng, l.cfg.Forbidden); err != nil {
			return nil, false
		}
		if !l.seen[l.hash(p)] {
			break
		}
	}
	return p, true
}

// moves lists p's neighbours (see local), in space order: moves of its
// active parameters.
func (l *local) moves(p Params) []localMove {
	var out []localMove
	for i, d := range l.cfg.Space {
		v, active := p[d.Name]
		if !active {
			continue
		}
		switch d.Type {
		case ParamArch:
			for _, a := range l.archs[i].Neighbors(v.Str) {
				out = append(out, localMove{i, String(a)})
			}
		case ParamChoice:
			for _, c := range d.Choices {
				if c != v.Str {
					out = append(out, localMove{i, String(c)})
				}
			}
		default:
			for _, x := range d.neighbors(v, l.step) {
				out = append(out, localMove{i, x})
			}
		}
	}
	return out
}

// neighbors are number v's neighbours in d, step of its (log) range below
// and above (clamped to the range; an integer moved at least one), without
// v itself.
func (d Param) neighbors(v Value, step float64) []Value {
	lo, hi := d.Min, d.Max
	if d.Type == ParamInt {
		lo, hi = math.Ceil(d.Min), math.Floor(d.Max)
	}
	u := d.toUnit(v)
	var out []Value
	for _, dir := range []float64{-1, 1} {
		var x float64
		switch w := u + dir*step; {
		case w <= 0:
			x = lo
		case w >= 1:
			x = hi
		default:
			x = d.fromUnit(w).Num
		}
		if d.Type == ParamInt && x == v.Num {
			x = clamp(v.Num+dir, lo, hi)
		}
		if x != v.Num && (len(out) == 0 || out[0].Num != x) {
			out = append(out, Float(x))
		}
	}
	return out
}

// hash is p's key in the visited set: FNV-1a over its values' JSON in
// space order (architectures canonical, so equal points hash equal), an
// inactive parameter's a byte 1 (JSON starts with none).
func (l *local) hash(p Params) uint64 {
	h := fnv.New64a()
	for _, d := range l.cfg.Space {
		v, ok := p[d.Name]
		if !ok {
			h.Write([]byte{1, 0})
			continue
		}
		b, _ := json.Marshal(v) // a Value always marshals
		h.Write(b)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// visit adds h to the visited set, forgetting the oldest past maxVisited.
func (l *local) visit(h uint64) {
	if l.seen[h] {
		return
	}
	l.seen[h] = true
	l.visited = append(l.visited, h)
	if len(l.visited) > l.maxVisited {
		delete(l.seen, l.visited[0])
		l.visited = l.visited[1:] // append reallocates as it fills: amortised O(1)
	}
}

func (l *local) Progress() float64 { return l.st.progress(l.cfg) }

func (l *local) Snapshot() ([]byte, error) {
	b, err := l.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot local searcher: rng: %w", err)
	}
	st := l.st
	st.RNG = b
	st.Visited = make([]byte, 0, 8*len(l.visited))
	for _, h := range l.visited {
		st.Visited = binary.BigEndian.AppendUint64(st.Visited, h)
	}
	return marshalSnapshot(AlgorithmLocal, st)
}

func (l *local) Restore(snapshot []byte) error {
	var st localState
	if err := unmarshalSnapshot(AlgorithmLocal, snapshot, &st); err != nil {
		return err
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore local searcher: rng: %w", err)
	}
	visited, err := l.check(st)
	if err != nil {
		return fmt.Errorf("restore local searcher: %w", err)
	}
	st.RNG, st.Visited = nil, nil
	l.pcg, l.rng, l.st = pcg, rand.New(pcg), st
	l.visited, l.seen = visited, map[uint64]bool{}
	for _, h := range visited {
		l.seen[h] = true
	}
	return nil
}

// check validates a restored state against the config and returns its
// visited hashes.
func (l *local) check(st localState) ([]uint64, error) {
	if err := st.window.check(l.cfg); err != nil {
		return nil, err
	}
	if len(st.Pending) != len(st.Outstanding) {
		return nil, fmt.Errorf("pending: %d for %d trials outstanding", len(st.Pending), len(st.Outstanding))
	}
	for i, tr := range st.Pending {
		if tr.Climb != st.Climb && tr.Climb != st.Climb+1 {
			return nil, fmt.Errorf("pending[%d]: climb %d, neither the current %d nor the next", i, tr.Climb, st.Climb)
		}
		if err := l.cfg.Space.Contains(tr.Params); err != nil {
			return nil, fmt.Errorf("pending[%d]: %w", i, err)
		}
	}
	if m := st.Center; m != nil {
		if err := m.check(l.cfg.Space); err != nil {
			return nil, fmt.Errorf("center: %w", err)
		}
	}
	if m := st.Next; m != nil {
		if err := m.check(l.cfg.Space); err != nil {
			return nil, fmt.Errorf("next: %w", err)
		}
	}
	if st.Center == nil && len(st.Moves) > 0 {
		return nil, fmt.Errorf("moves: %d without a centre", len(st.Moves))
	}
	for i, m := range st.Moves {
		if m.Dim < 0 || m.Dim >= len(l.cfg.Space) {
			return nil, fmt.Errorf("moves[%d]: dimension %d of %d", i, m.Dim, len(l.cfg.Space))
		}
		d := l.cfg.Space[m.Dim]
		if _, active := st.Center.Params[d.Name]; !active {
			return nil, fmt.Errorf("moves[%d]: %q is inactive in the centre", i, d.Name)
		}
		d.When = nil
		if err := (Space{d}).Contains(Params{d.Name: m.Value}); err != nil {
			return nil, fmt.Errorf("moves[%d]: %w", i, err)
		}
	}
	if len(st.Visited)%8 != 0 || len(st.Visited) > 8*l.maxVisited {
		return nil, fmt.Errorf("visited: %d bytes, not 8 per hash for at most %d", len(st.Visited), l.maxVisited)
	}
	visited := make([]uint64, 0, len(st.Visited)/8)
	seen := map[uint64]bool{}
	for b := st.Visited; len(b) > 0; b = b[8:] {
		h := binary.BigEndian.Uint64(b)
		if seen[h] {
			return nil, fmt.Errorf("visited: hash %#x twice", h)
		}
		seen[h] = true
		visited = append(visited, h)
	}
	return visited, nil
}
