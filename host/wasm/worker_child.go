package wasm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Worker processes, the child's side (worker_pool.go is the host's). The host re-executes its own
// binary (/proc/self/exe, so a binary replaced on disk since start changes nothing) with workerEnv set
// and nothing else in its environment. The worker compiles and runs instances; it touches the machine
// for nothing but its compile cache: every capability call is sent to the host, checked and answered
// there. At the deadline the host kills the worker, which is why compiled code needs no deadline
// checks, and why a word cannot outlive its time whatever it loops on.

// workerEnv marks a process the host started as its worker.
const workerEnv = "LEXICON_WASM_WORKER"

// ServeWorkerIfChild turns this process into a worker and exits, when the host started it as one; it
// returns at once otherwise. A binary that runs words with Process isolation calls it first thing in
// main, and its tests in TestMain.
func ServeWorkerIfChild() {
	if os.Getenv(workerEnv) != "1" {
		return
	}
	os.Exit(serveWorker(os.NewFile(3, "from-host"), os.NewFile(4, "to-host")))
}

func serveWorker(in io.Reader, out io.Writer) int {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	send := func(f *frame) {
		if writeFrame(w, f) != nil || w.Flush() != nil {
			os.Exit(0) // the host is gone
		}
	}
	hello, err := readFrame(r, true, nil)
	if err != nil || hello.Kind != kindHello {
		return 2
	}
	eng := &engine{}
	if hello.CacheDir != "" {
		c, err := openCompileCache(hello.CacheDir, hello.blob)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lexicon wasm worker:", err)
			return 2
		}
		eng.cache = c
	}
	mods := map[string]*compiled{}
	ctx := context.Background()
	// compiles reports whether a load frame will compile (rather than find the word loaded or, warming,
	// already cached).
	compiles := func(f *frame) bool {
		_, ok := mods[loadKey(f.Digest, f.Memory)]
		return !ok && !(f.Warm && eng.cache.has(f.Digest, eng.variant()))
	}
	// A load's cache entry is verified and staged while the module's bytes are still arriving and being
	// hashed: both are megabytes, and the two cores of a small node can do them at once.
	head := func(f *frame) {
		if f.Kind == kindLoad && compiles(f) {
			eng.stage(f.Digest)
		}
	}
	for {
		f, err := readFrame(r, true, head)
		if err != nil {
			return 0 // the host closed the pipe
		}
		switch f.Kind {
		case kindLoad:
			key := loadKey(f.Digest, f.Memory)
			if !compiles(f) {
				send(&frame{Kind: kindLoaded, Stats: &CacheStats{}})
				continue
			}
			err := checkDigest(f.Name, f.blob, f.Digest)
			var c *compiled
			if err == nil {
				c, err = eng.compile(ctx, f.Name, f.Digest, f.blob, f.Memory)
			} else {
				eng.unstage()
			}
			if err != nil {
				e := errcode.From(err, errcode.WordHostFailed)
				send(&frame{Kind: kindLoaded, Error: &wireError{Code: e.Code, Message: e.Message, Details: e.Details}})
				continue
			}
			if f.Warm {
				c.close()
				debug.FreeOSMemory()
				send(&frame{Kind: kindLoaded, Stats: &c.stats})
				continue
			}
			mods[key] = c
			send(&frame{Kind: kindLoaded, Stats: &c.stats})
			c.prepareNext()
			// Compiling leaves tens of MiB of garbage (the decoded module, the cache read); give it back
			// now rather than whenever the scavenger gets to it, since a worker lives on, idle, for
			// seconds. Off the load's path: the host already has its answer and the next instance is
			// being made.
			go debug.FreeOSMemory()
		case kindRun:
			c := mods[loadKey(f.Digest, f.Memory)]
			if c == nil {
				return 2
			}
			inv := &invocation{
				stdin:  f.blob,
				stdout: &cappedBuffer{limit: f.Output},
				stderr: &cappedBuffer{limit: f.Transcript},
				caller: relay{r: r, send: send},
			}
			o := c.run(ctx, inv)
			done := &frame{Kind: kindDone, Exited: o.exited, ExitCode: o.exitCode,
				StdoutLen: inv.stdout.buf.Len(), StdoutOver: inv.stdout.overflow, StderrOver: inv.stderr.overflow,
				MemExceeded: inv.memExceeded()}
			if o.trap != nil {
				done.Trap = o.trap.Error()
			}
			done.blob = append(inv.stdout.buf.Bytes(), inv.stderr.buf.Bytes()...)
			send(done)
			// The next run's instance is made now, while the host reads this result and sends more
			// work; it is fresh all the same, never run before it is handed out.
			c.prepareNext()
		default:
			return 2
		}
	}
}

func loadKey(digest string, memory uint64) string { return fmt.Sprintf("%s/%d", digest, memory) }

// relay is the worker's side of a capability call: ask the host, wait for its answer.
type relay struct {
	r    io.Reader
	send func(*frame)
}

func (rl relay) call(_ context.Context, req []byte) []byte {
	rl.send(&frame{Kind: kindCall, blob: req})
	f, err := readFrame(rl.r, true, nil)
	if err != nil || f.Kind != kindAnswer {
		os.Exit(0) // the host is gone or confused; it will report this run
	}
	return f.blob
}
