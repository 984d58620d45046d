package wasm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The host and its worker processes talk over a pair of pipes in frames: a big-endian uint32 header
// length, a uint32 blob length, the header (JSON) and the blob (module bytes, a request, output).

const (
	maxFrameHeader = 1 << 20
	maxFrameBlob   = 256 << 20 // a module; outputs and requests are far smaller
)

// Frame kinds.
const (
	kindHello  = "hello"  // host → worker: the cache directory and key (blob)
	kindLoad   = "load"   // host → worker: compile the module (blob)
	kindLoaded = "loaded" // worker → host: compiled, with cache stats, or an error
	kindRun    = "run"    // host → worker: run it with params (blob), as run ID
	kindCall   = "call"   // worker → host: run ID's capability request (blob)
	kindAnswer = "answer" // host → worker: the response to run ID's call (blob)
	kindDone   = "done"   // worker → host: how run ID ended; blob is stdout then stderr
)

type frame struct {
	Kind string `json:"kind"`
	// run, call, answer, done: which of the worker's concurrent runs the frame belongs to. The host
	// numbers runs per worker from 1; a call's answer carries its run's id.
	ID uint64 `json:"id,omitempty"`

	// hello
	CacheDir string `json:"cache_dir,omitempty"`
	// load, run: the word's name, which a run's instance is started as (argv[0]). A load's is only the
	// first instance's guess: words sharing a module share its load, and each run names its own word.
	Name string `json:"name,omitempty"`
	Warm bool   `json:"warm,omitempty"` // load: into the compile cache only, not kept
	// load: ready the module for the interpreter, compiling nothing (engine.interpret)
	Interpret bool   `json:"interpret,omitempty"`
	Digest    string `json:"digest,omitempty"`
	Memory    uint64 `json:"memory,omitempty"`
	// run
	Output     int `json:"output,omitempty"`
	Transcript int `json:"transcript,omitempty"`
	// loaded
	Stats *CacheStats `json:"stats,omitempty"`
	Error *wireError  `json:"error,omitempty"`
	// done
	Exited      bool   `json:"exited,omitempty"`
	ExitCode    uint32 `json:"exit_code,omitempty"`
	Trap        string `json:"trap,omitempty"`
	StdoutLen   int    `json:"stdout_len,omitempty"`
	StdoutOver  bool   `json:"stdout_over,omitempty"`
	StderrOver  bool   `json:"stderr_over,omitempty"`
	MemExceeded bool   `json:"mem_exceeded,omitempty"`

	blob []byte
}

type wireError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func writeFrame(w io.Writer, f *frame) error {
	h, err := json.Marshal(f)
	if err != nil {
		return err
	}
	var n [8]byte
	binary.BigEndian.PutUint32(n[:4], uint32(len(h)))
	binary.BigEndian.PutUint32(n[4:], uint32(len(f.blob)))
	// One write for small frames keeps the pipe traffic to a single syscall.
	if len(h)+len(f.blob) < 64<<10 {
		buf := make([]byte, 0, 8+len(h)+len(f.blob))
		buf = append(append(append(buf, n[:]...), h...), f.blob...)
		_, err = w.Write(buf)
		return err
	}
	if _, err = w.Write(n[:]); err == nil {
		if _, err = w.Write(h); err == nil {
			_, err = w.Write(f.blob)
		}
	}
	return err
}

// readFrame reads one frame. A frame from a worker grows its buffer with the bytes that really arrive,
// so a lying length costs the host nothing until it is sent; a frame from the host (trustLength, read
// by a worker) is read into a buffer of its stated size at once: a module is megabytes, and growing to
// it doubles the pages a new process faults in and copies. head, if set, is shown the frame before its
// blob is read, so a worker can start on a load while the module's bytes are still arriving.
func readFrame(r io.Reader, trustLength bool, head func(*frame)) (*frame, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	hl, bl := binary.BigEndian.Uint32(n[:4]), binary.BigEndian.Uint32(n[4:])
	if hl > maxFrameHeader || bl > maxFrameBlob {
		return nil, fmt.Errorf("frame of %d+%d bytes is over the cap", hl, bl)
	}
	h, err := readBytes(r, int(hl), trustLength)
	if err != nil {
		return nil, err
	}
	f := &frame{}
	if err := json.Unmarshal(h, f); err != nil {
		return nil, fmt.Errorf("frame header: %w", err)
	}
	if head != nil {
		head(f)
	}
	if f.blob, err = readBytes(r, int(bl), trustLength); err != nil {
		return nil, err
	}
	return f, nil
}

func readBytes(r io.Reader, n int, trustLength bool) ([]byte, error) {
	if trustLength {
		b := make([]byte, n)
		if got, err := io.ReadFull(r, b); err != nil {
			return nil, frameCut(got, err)
		}
		return b, nil
	}
	var buf bytes.Buffer
	buf.Grow(min(n, 64<<10))
	if got, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, frameCut(int(got), err)
	}
	return buf.Bytes(), nil
}

func frameCut(n int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("frame cut after %d bytes: %w", n, io.ErrUnexpectedEOF)
	}
	return err
}
