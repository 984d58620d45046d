package wasm

// KillWorkers kills the host's worker processes behind its back, as a crash of the engine would.
func KillWorkers(h *Host) {
	h.pool.mu.Lock()
	defer h.pool.mu.Unlock()
	for w := range h.pool.live {
		_ = w.cmd.Process.Kill()
	}
}
