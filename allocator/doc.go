// Package allocator decides how many and which idle nodes each active trial
// gets. It is pure: it imports no Temporal, does no I/O and keeps no global
// state, so the pool workflow's activity, the simulator and the benchmarks
// all call it directly.
//
// The problem (BFTrainer, arXiv 2106.12091, §3): idle nodes N; trials j with
// current nodes C_j, bounds min_j ≤ k ≤ max_j, a throughput curve O_j(k),
// rescale costs R_up_j and R_dw_j (seconds of progress lost when the trial
// grows or shrinks) and a weight w_j; a look-ahead T_fwd. Choose n_j ∈ {0} ∪
// [min_j, max_j] with Σ n_j ≤ |N| to maximise
//
//	Σ_j w_j·( T_fwd·O_j(n_j) − [n_j > C_j]·R_up_j·r_j − [n_j < C_j]·R_dw_j·r_j )
//
// where r_j = O_j(|C_j|) is the rate the trial runs at now (0 when it is not
// running, so starting costs nothing). No trial migrates: it only gains
// nodes or only loses nodes.
//
// Formulations: FormulationCompact (the default; a multiple-choice knapsack
// on HiGHS with exact reductions), FormulationPaper (the node-level MILP as
// BFTrainer's authors wrote it, the reference for correctness), and the
// baselines FormulationGreedy and FormulationEqual. See docs/allocator.md.
//
// The HiGHS binding is used only inside this package, so it can change
// without touching any caller.
package allocator
