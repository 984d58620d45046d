package goplugin

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A writable shared mapping makes F_SEAL_WRITE fail with EBUSY, as pinned pages do: sealing waits for
// it to go instead of failing the start.
func TestSealingWaitsOutBusyPages(t *testing.T) {
	fd, err := unix.MemfdCreate("busy", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "busy")
	defer f.Close()
	if _, err := f.Write([]byte("#!/bin/sh\n")); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, 10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	tries := 0
	err = addSeals(f.Fd(), func(try int) bool {
		tries = try
		if mem != nil {
			if err := unix.Munmap(mem); err != nil {
				t.Fatal(err)
			}
			mem = nil
		}
		return true
	})
	if err != nil || tries != 1 {
		t.Fatalf("sealing after the busy pages went: %v after %d tries", err, tries)
	}
	if _, err := f.WriteAt([]byte("X"), 0); err == nil {
		t.Error("the memfd is not sealed against writes")
	}

	// Busy for good: the caller's answer ends the waiting, and the error says why.
	fd2, err := unix.MemfdCreate("busy2", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	h := os.NewFile(uintptr(fd2), "busy2")
	defer h.Close()
	if err := h.Truncate(10); err != nil {
		t.Fatal(err)
	}
	held, err := unix.Mmap(fd2, 0, 10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(held)
	if err := addSeals(h.Fd(), func(try int) bool { return try < 3 }); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("sealing a file mapped writable for good: %v", err)
	}
}
