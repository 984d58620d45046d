package wasm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Worker processes, the child's side (worker_pool.go is the host's). The host re-executes its own
// binary (/proc/self/exe, so a binary replaced on disk since start changes nothing) with workerEnv set
// and nothing else in its environment. The worker compiles and runs instances; it touches the machine
// for nothing but its compile cache: every capability call is sent to the host, checked and answered
// there. A worker runs the concurrent runs of one word, each in its own goroutine and its own fresh
// instance. When one passes its deadline the host kills the worker, which is why compiled code needs
// no deadline checks, and why a word cannot outlive its time whatever it loops on; the word's other
// runs in that worker end with it.

// workerEnv marks a process the host started as its worker.
const workerEnv = "LEXICON_WASM_WORKER"

// ServeWorkerIfChild turns this process into a worker and exits, when the host started it as one; it
// returns at once otherwise. A binary that runs words with Process isolation calls it first thing in
// main, and its tests in TestMain.
func ServeWorkerIfChild() {
	if os.Getenv(workerEnv) != "1" {
		return
	}
	// Non-blocking descriptors go through Go's poller: the loop reading the host's frames, always
	// waiting while runs execute, then parks its goroutine instead of holding a thread in read(2),
	// which had the runtime retake and hand off that thread's P around every run (measured: +0.5 ms
	// of CPU a call). os/exec hands them over blocking; NewFile sees the flag.
	for _, fd := range []int{3, 4} {
		_ = syscall.SetNonblock(fd, true)
	}
	// One P: handing a run from the goroutine that read it to the one that reads next then wakes no
	// other thread. With a P per core every run woke and parked threads (+0.15 ms wall, +0.17 ms CPU a
	// call against one run per worker); with one, a call costs less than it did (RATIONALE,
	// "Footprint"). The runs of a word in a worker share a core; other words run in other workers.
	compileProcs = runtime.GOMAXPROCS(1)
	os.Exit(serveWorker(os.NewFile(3, "from-host"), os.NewFile(4, "to-host")))
}

// compileProcs is the worker's GOMAXPROCS before it kept to one: the cores a load may compile on.
var compileProcs = 1

// compileLoad compiles a load frame's module, or readies it for the interpreter when the frame says
// so. A load (a word about to run) compiles on compileProcs cores, given back to one when it is done;
// a warm keeps to the one.
func compileLoad(ctx context.Context, eng *engine, f *frame) (*compiled, error) {
	if f.Interpret {
		return eng.interpret(ctx, f.blob, f.Memory)
	}
	if f.Warm || compileProcs <= 1 {
		return eng.compile(ctx, f.Digest, f.blob, f.Memory)
	}
	runtime.GOMAXPROCS(compileProcs)
	defer runtime.GOMAXPROCS(1)
	return eng.compile(foreground(ctx, compileProcs), f.Digest, f.blob, f.Memory)
}

func serveWorker(in io.Reader, out io.Writer) int {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	var sendMu sync.Mutex // runs send their calls and results from their own goroutines
	send := func(f *frame) {
		sendMu.Lock()
		defer sendMu.Unlock()
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
	mods := map[string]*compiled{} // read and written by the goroutine reading frames only
	calls := &pendingCalls{waiting: map[uint64]chan []byte{}}
	exit := make(chan int, 1)
	go serveFrames(r, send, eng, mods, calls, exit)
	return <-exit
}

// handedOff is what serveFrames returns when it has handed reading to another goroutine.
const handedOff = -1

// serveFrames reads the host's frames and sends exit the worker's exit code when the host is gone or
// confused. A run frame makes this goroutine run the word, at once and on the thread that read it,
// while a new serveFrames goes on reading: the next run of the word, and the answers to every run's
// capability calls.
func serveFrames(r *bufio.Reader, send func(*frame), eng *engine, mods map[string]*compiled, calls *pendingCalls, exit chan<- int) (code int) {
	defer func() {
		if code != handedOff {
			exit <- code
		}
	}()
	ctx := context.Background()
	// compiles reports whether a load frame will compile (rather than find the word loaded or, warming,
	// already cached).
	compiles := func(f *frame) bool {
		_, ok := mods[loadKey(f.Digest, f.Memory)]
		return !ok && !(f.Warm && eng.cache.has(f.Digest, eng.variant()))
	}
	// A load's cache entry is verified and staged while the module's bytes are still arriving and being
	// hashed: both are megabytes, and the two cores of a small node can do them at once. So a load that
	// will compile takes the cores it compiles on (compileLoad) from its first byte, not its last.
	head := func(f *frame) {
		if f.Kind == kindLoad && !f.Interpret && compiles(f) {
			if !f.Warm {
				runtime.GOMAXPROCS(compileProcs)
			}
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
				c, err = compileLoad(ctx, eng, f)
			} else {
				eng.unstage()
				runtime.GOMAXPROCS(1)
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
			c.prepareNext(f.Name)
			// Compiling leaves tens of MiB of garbage (the decoded module, the cache read); give it back
			// now rather than whenever the scavenger gets to it, since a worker lives on, idle, for
			// seconds. Off the load's path: the host already has its answer and the next instance is
			// being made.
			go debug.FreeOSMemory()
		case kindRun:
			c := mods[loadKey(f.Digest, f.Memory)]
			if c == nil || f.ID == 0 || f.Name == "" {
				return 2
			}
			go serveFrames(r, send, eng, mods, calls, exit)
			serveRun(ctx, c, f, relay{id: f.ID, calls: calls, send: send}, send)
			return handedOff
		case kindAnswer:
			if !calls.answer(f.ID, f.blob) {
				return 2 // an answer nobody asked for: the host is confused
			}
		default:
			return 2
		}
	}
}

func loadKey(digest string, memory uint64) string { return fmt.Sprintf("%s/%d", digest, memory) }

// serveRun runs one invocation and sends how it ended. Everything that is the word's comes with the
// run, not the load: its name (words may share a module, and so this compiled code) and its caps.
func serveRun(ctx context.Context, c *compiled, f *frame, caller relay, send func(*frame)) {
	inv := &invocation{
		name:   f.Name,
		stdin:  f.blob,
		stdout: &cappedBuffer{limit: f.Output},
		stderr: &cappedBuffer{limit: f.Transcript},
		caller: caller,
	}
	o := c.run(ctx, inv)
	done := &frame{Kind: kindDone, ID: f.ID, Exited: o.exited, ExitCode: o.exitCode,
		StdoutLen: inv.stdout.buf.Len(), StdoutOver: inv.stdout.overflow, StderrOver: inv.stderr.overflow,
		MemExceeded: inv.memExceeded()}
	if o.trap != nil {
		done.Trap = o.trap.Error()
	}
	done.blob = append(inv.stdout.buf.Bytes(), inv.stderr.buf.Bytes()...)
	// The next run's instance is made now, while the host reads this result and sends more work; it is
	// fresh all the same, never run before it is handed out, and handed out once. It is started before
	// the result is sent, so that the host's next run, which this loop reads before this goroutine
	// might get to it, finds it under way rather than making one of its own.
	c.prepareNext(f.Name)
	send(done)
}

// pendingCalls holds the runs waiting for the host's answer to a capability call, by run id. A run
// makes one call at a time (a word's calls block it), so the id is enough to match an answer.
type pendingCalls struct {
	mu      sync.Mutex
	waiting map[uint64]chan []byte
}

func (p *pendingCalls) wait(id uint64) chan []byte {
	ch := make(chan []byte, 1)
	p.mu.Lock()
	p.waiting[id] = ch
	p.mu.Unlock()
	return ch
}

// answer hands resp to the run waiting as id; false when none is.
func (p *pendingCalls) answer(id uint64, resp []byte) bool {
	p.mu.Lock()
	ch, ok := p.waiting[id]
	delete(p.waiting, id)
	p.mu.Unlock()
	if ok {
		ch <- resp
	}
	return ok
}

// relay is the worker's side of a capability call: ask the host, wait for its answer, which the
// worker's reading loop hands over by run id.
type relay struct {
	id    uint64
	calls *pendingCalls
	send  func(*frame)
}

func (rl relay) call(_ context.Context, req []byte) []byte {
	ch := rl.calls.wait(rl.id) // before the call is sent, so the answer always finds it
	rl.send(&frame{Kind: kindCall, ID: rl.id, blob: req})
	// The worker exits when the host is gone (the reading loop returns), so this never waits on a dead
	// host.
	return <-ch
}
