// Command evil is a hostile word for the host's containment tests: each attack tries to get out of its
// sandbox or to take the host down, and reports anything it obtained in its output.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Attack string `json:"attack"`
	Path   string `json:"path"`
	URL    string `json:"url"`
	Unit   string `json:"unit"`
}

type output struct {
	OK     bool   `json:"ok"`
	Stolen string `json:"stolen,omitempty"`
	Count  int    `json:"count,omitempty"`
	Bad    any    `json:"bad,omitempty"`
}

// runs counts the runs this instance has seen: a fresh instance per call always starts it at zero.
var runs int

// marker's bytes lie in the module's data segments; scribble overwrites them.
var marker = "lexicon: data as the module shipped it"

func main() {
	word.Run(func(p params) (output, error) {
		runs++
		switch p.Attack {
		case "wasi_open":
			b, err := os.ReadFile("/etc/shadow")
			if err != nil {
				return output{}, err
			}
			return output{OK: true, Stolen: string(b)}, nil
		case "wasi_list":
			entries, err := os.ReadDir("/")
			if err != nil {
				return output{}, err
			}
			return output{OK: true, Stolen: fmt.Sprint(len(entries), " entries")}, nil
		case "wasi_socket":
			// WASI preview 1 has no socket or connect; a word can only accept on a socket the host
			// preopened, after stdio. Try every low descriptor without blocking, then the Go way of
			// dialling out.
			for fd := 3; fd < 64; fd++ {
				_ = syscall.SetNonblock(fd, true)
				conn, _, err := syscall.Accept(fd)
				if err == nil {
					return output{OK: true, Stolen: fmt.Sprint("accepted fd ", conn, " on fd ", fd)}, nil
				}
				if err != syscall.EBADF && err != syscall.ENOTSOCK {
					return output{OK: true, Stolen: fmt.Sprint("fd ", fd, " is a socket: ", err)}, nil
				}
			}
			if c, err := net.Dial("tcp", p.URL); err == nil {
				c.Close()
				return output{OK: true, Stolen: "dialled " + p.URL}, nil
			}
			return output{}, errors.New("no socket to accept on and none to dial")
		case "env":
			return output{OK: true, Stolen: strings.Join(os.Environ(), ";")}, nil
		case "fs_read":
			b, _, err := word.FS().Read(p.Path)
			if err != nil {
				return output{}, err
			}
			return output{OK: true, Stolen: string(b)}, nil
		case "fs_write":
			_, err := word.FS().Write(p.Path, []byte("owned\n"), 0o644)
			return output{OK: err == nil}, err
		case "undeclared_cap":
			var out any
			err := word.Call(map[string]any{"cap": "exec.pinned", "path": "/bin/sh", "args": []string{"-c", "id"}}, &out)
			return output{OK: err == nil, Stolen: fmt.Sprint(out)}, err
		case "unknown_cap":
			err := word.Call(map[string]any{"cap": "shell.exec", "cmd": "id"}, nil)
			return output{OK: err == nil}, err
		case "unit":
			u, err := word.Systemd().Unit(p.Unit)
			return output{OK: err == nil, Stolen: u.ActiveState}, err
		case "restart":
			err := word.Systemd().Restart(p.Unit)
			return output{OK: err == nil}, err
		case "http":
			r, err := word.HTTP().Get(p.URL)
			return output{OK: err == nil, Stolen: string(r.Body)}, err
		case "exec":
			r, err := word.Exec().Run(p.Path, "-c", "id")
			return output{OK: err == nil, Stolen: string(r.Stdout)}, err
		case "loop":
			for {
			}
		case "sleep":
			// The attack under test, not synchronisation: the host must stop a sleeping word at its
			// deadline.
			time.Sleep(time.Hour)
			return output{OK: true}, nil
		case "memory":
			var hoard [][]byte
			for {
				hoard = append(hoard, make([]byte, 1<<20))
				hoard[len(hoard)-1][0] = 1
			}
		case "stdout_flood":
			line := []byte(strings.Repeat("x", 4096))
			for {
				os.Stdout.Write(line)
			}
		case "stderr_flood":
			line := []byte(strings.Repeat("y", 4096) + "\n")
			for {
				os.Stderr.Write(line)
			}
		case "panic":
			panic("evil word panics on purpose")
		case "exit":
			os.Exit(3)
		case "bad_output":
			return output{OK: false, Bad: map[string]int{"not": 1}}, nil
		case "fail":
			return output{}, word.Fail("evil.gave_up", "the evil word gives up").With("tries", 3)
		case "fail_reserved":
			return output{}, word.Fail("word.deadline_exceeded", "pretending the host stopped me")
		case "hang_until":
			// Hangs (until its deadline stops it) while the clock is before the time path holds, and
			// answers after it.
			b, _, err := word.FS().Read(p.Path)
			if err != nil {
				return output{}, err
			}
			until, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
			if err != nil {
				return output{}, err
			}
			if time.Now().Before(until) {
				time.Sleep(time.Hour) // the behaviour under test: stopped at the deadline, not a wait
			}
			return output{OK: true}, nil
		case "counter":
			return output{OK: true, Count: runs}, nil
		case "scribble":
			// Overwrite data the module shipped and heap the runtime takes to be zero, and report what
			// was there first: a later run must find both as a fresh instance has them.
			data := unsafe.Slice(unsafe.StringData(marker), len(marker))
			seen := string(data)
			for i := range data {
				data[i] = 'X'
			}
			heap := make([]byte, 1<<20)
			dirty := 0
			for i := range heap {
				if heap[i] != 0 {
					dirty++
				}
				heap[i] = 0xff
			}
			return output{OK: true, Stolen: seen, Count: dirty}, nil
		case "log":
			word.Log("first line of the transcript")
			word.Log("second line")
			return output{OK: true}, nil
		}
		return output{}, word.Fail("evil.unknown_attack", "no attack %q", p.Attack)
	})
}
