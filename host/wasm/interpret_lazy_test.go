package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/lexicon-fleet/lexicon/host/wasm"
)

// TestInterpreterLowersFunctionsWhenFirstEntered: the patched wazero's interpreter (third_party/wazero,
// LEXICON.md) readies a module without lowering its functions, which a Go word's first look would
// spend most of its load on, and lowers each when a call first enters it: concurrent instances of one
// module run correctly while they lower the same functions (run under -race by make test).
func TestInterpreterLowersFunctionsWhenFirstEntered(t *testing.T) {
	ctx := context.Background()
	module, _ := testWord(t, "empty")
	rt, err := wasm.InterpreterRuntime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)

	// Lowered whole, a Go word's operations outweigh its bytes twenty times over (81 MiB for this
	// one); readied lazily the compile allocates about twice its bytes (decoding and validation).
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(len(module)) {
		t.Errorf("readying a %d KiB module allocated %d KiB: its functions were lowered before any ran", len(module)>>10, alloc>>10)
	}

	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 4)
	errs := make([]error, len(outs))
	for i := range outs {
		wg.Go(func() {
			cfg := wazero.NewModuleConfig().WithName("").WithArgs("empty").WithStdin(bytes.NewReader([]byte(`{}`))).WithStdout(&outs[i])
			_, errs[i] = rt.InstantiateModule(ctx, cm, cfg)
		})
	}
	wg.Wait()
	for i := range outs {
		var exit *sys.ExitError
		if errs[i] != nil && !(errors.As(errs[i], &exit) && exit.ExitCode() == 0) {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if got := bytes.TrimSpace(outs[i].Bytes()); string(got) != `{}` {
			t.Fatalf("run %d answered %q", i, got)
		}
	}
}
