package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// chunkStartPatience is how long PoolLog waits for the records workflow of
// a chunk the pool has just cut to start (the pool counts it once it
// asked for it; the server starts it a moment later).
const chunkStartPatience = 10 * time.Second

// unlistedChunks is how many of a pool's newest chunks PoolLog reads by
// their ids when visibility does not list them yet.
const unlistedChunks = 8

// PoolLog reads a pool's log (gleaner.PoolEvent): its chunks numbered
// fromChunk and on, sorted by number, and the entries not yet in a chunk
// (gleaner.QueryPoolLog), which follow the last chunk; gleaner.NodeSpans
// reads them together. A chunk never changes, so a caller keeps what it
// read and asks for the rest: PoolLog(ctx, pool, len(cached)) while it
// holds chunks 0 … len(cached)−1.
//
// The pool is asked first (live.Chunks chunks are kept), then its chunks
// listed (visibility: GleanerPool = "<pool>" AND GleanerKind =
// "pool-records") and each read from its workflow's result. A chunk past
// the namespace's retention is gone and missing from the answer; the
// newest, which visibility may not list yet, are read by their ids.
func (c *Client) PoolLog(ctx context.Context, pool string, fromChunk int) ([]gleaner.PoolRecords, gleaner.PoolLog, error) {
	var live gleaner.PoolLog
	if err := checkName("pool", pool); err != nil {
		return nil, live, err
	}
	poolID := gleaner.PoolWorkflowID(pool)
	if err := c.query(ctx, poolID, fmt.Sprintf("pool %q", pool), gleaner.QueryPoolLog, &live); err != nil {
		return nil, live, err
	}
	fromChunk = max(fromChunk, 0)
	if fromChunk >= live.Chunks {
		return nil, live, nil
	}
	ids, err := c.listIDs(ctx, fmt.Sprintf("%s = %q AND %s = %q",
		gleaner.SearchAttrPool, pool, gleaner.SearchAttrKind, gleaner.WorkflowKindPoolRecords))
	if err != nil {
		return nil, live, fmt.Errorf("listing the log chunks of pool %q: %w", pool, err)
	}
	listed := map[int]bool{}
	newest := -1
	for _, id := range ids {
		n, ok := chunkNumber(poolID, id)
		if ok && n < live.Chunks {
			listed[n] = true
			newest = max(newest, n)
		}
	}
	// Listed, or among the newest few and newer than every listed one
	// (visibility lags a moment); the others are gone.
	var want []int
	for n := fromChunk; n < live.Chunks; n++ {
		if listed[n] || (n > newest && n >= live.Chunks-unlistedChunks) {
			want = append(want, n)
		}
	}
	chunks, err := c.readChunks(ctx, poolID, want, func(n int) bool { return !listed[n] && n >= live.Chunks-2 })
	if err != nil {
		return nil, live, fmt.Errorf("reading the log of pool %q: %w", pool, err)
	}
	return chunks, live, nil
}

// chunkNumber is the number of chunk id of the pool whose workflow id is
// poolID.
func chunkNumber(poolID, id string) (int, bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 0 || gleaner.PoolRecordsWorkflowID(poolID, n) != id {
		return 0, false
	}
	return n, true
}

// readChunks reads the chunks numbered want, 8 at a time; a chunk not
// found is left out, except that one fresh(n) (the newest, not listed:
// the pool may have just cut it) is waited for up to chunkStartPatience.
func (c *Client) readChunks(ctx context.Context, poolID string, want []int, fresh func(int) bool) ([]gleaner.PoolRecords, error) {
	got := make([]gleaner.PoolRecords, len(want))
	found := make([]bool, len(want))
	errs := make([]error, len(want))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, n := range want {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			id := gleaner.PoolRecordsWorkflowID(poolID, n)
			deadline := time.Now().Add(chunkStartPatience)
			for {
				err := c.tc.GetWorkflow(ctx, id, "").Get(ctx, &got[i])
				switch {
				case err == nil:
					found[i] = true
					return
				case !isNotFound(err):
					errs[i] = fmt.Errorf("chunk %s: %w", id, err)
					return
				case !fresh(n) || time.Now().After(deadline):
					return // past retention, or never started
				}
				select {
				case <-ctx.Done():
					errs[i] = ctx.Err()
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	var out []gleaner.PoolRecords
	for i := range want {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if found[i] {
			out = append(out, got[i])
		}
	}
	slices.SortFunc(out, func(a, b gleaner.PoolRecords) int { return a.Chunk - b.Chunk })
	return out, nil
}
