package wasm

import (
	"context"

	"github.com/tetratelabs/wazero"
)

// KillWorkers kills the host's worker processes behind its back, as a crash of the engine would.
func KillWorkers(h *Host) {
	h.pool.mu.Lock()
	defer h.pool.mu.Unlock()
	for w := range h.pool.live {
		_ = w.cmd.Process.Kill()
	}
}

// NewWithoutDeadline returns an in-process host whose compiled code has no deadline checks: nothing
// stops a runaway word. It exists only as the benchmarks' baseline.
func NewWithoutDeadline(ctx context.Context, cfg Config) (*Host, error) {
	cfg.Isolation = InProcess
	h, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h.eng.stopInCode = false
	return h, nil
}

// WorkerPIDs lists the host's live worker processes.
func WorkerPIDs(h *Host) []int {
	if h.pool == nil {
		return nil
	}
	h.pool.mu.Lock()
	defer h.pool.mu.Unlock()
	var pids []int
	for w := range h.pool.live {
		pids = append(pids, w.cmd.Process.Pid)
	}
	return pids
}

// WorkerExits returns a channel per live worker, closed when that worker process has exited.
func WorkerExits(h *Host) []<-chan struct{} {
	if h.pool == nil {
		return nil
	}
	h.pool.mu.Lock()
	defer h.pool.mu.Unlock()
	var chans []<-chan struct{}
	for w := range h.pool.live {
		chans = append(chans, w.exited)
	}
	return chans
}

// RunsPerWorker is how many concurrent runs of one word a worker hosts.
const RunsPerWorker = runsPerWorker

// ValidatedModuleKey is the context key host/wasm vouches for a cache entry with.
const ValidatedModuleKey = validatedModuleKey

// InterpreterRuntime is a runtime on wazero's interpreter with the modules the host provides, built as
// the host builds the one it readies an uncached look in (engine.interpret). The caller closes it.
func InterpreterRuntime(ctx context.Context) (wazero.Runtime, error) {
	c, err := (&engine{}).newRuntime(ctx, wazero.NewRuntimeConfigInterpreter(), 1<<30, nil)
	if err != nil {
		return nil, err
	}
	return c.rt, nil
}
