package wasm

import (
	"bytes"
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/lexicon-fleet/lexicon/host/wasm/internal/caps"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// ModuleName is the import module of the capability ABI: a word's only door out of its sandbox. Its
// functions and wire format are specified in package capv1.
const ModuleName = capv1.ModuleName

// instantiateLexiconV1 is the one place the lexicon_v1 host module is built. Its functions find the
// invocation they serve in the call's context, so one runtime serves many concurrent instances.
func instantiateLexiconV1(ctx context.Context, r wazero.Runtime) error {
	i32 := api.ValueTypeI32
	_, err := r.NewHostModuleBuilder(ModuleName).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostCall), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("req_ptr", "req_len", "resp_ptr", "resp_cap").
		WithResultNames("resp_len").
		Export("call").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostTake), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("resp_ptr", "resp_cap").
		WithResultNames("resp_len").
		Export("take").
		Instantiate(ctx)
	return err
}

// hostCaller answers one capability request with one response, both JSON.
type hostCaller interface {
	call(ctx context.Context, req []byte) []byte
}

type invocationKey struct{}

func invocationFrom(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	reqPtr, reqLen := uint32(stack[0]), uint32(stack[1])
	respPtr, respCap := uint32(stack[2]), uint32(stack[3])
	inv := invocationFrom(ctx)
	var resp []byte
	switch {
	case inv == nil:
		resp = caps.ErrorResponse(errcode.New(errcode.CapabilityDenied, "no invocation is running"))
	case reqLen > capv1.MaxRequest:
		resp = caps.ErrorResponse(errcode.New(errcode.CapabilityInvalid, "request is %d bytes, over the %d-byte cap", reqLen, capv1.MaxRequest))
	default:
		buf, ok := mod.Memory().Read(reqPtr, reqLen)
		if !ok {
			resp = caps.ErrorResponse(errcode.New(errcode.CapabilityInvalid, "request lies outside the word's memory"))
			break
		}
		resp = inv.caller.call(ctx, bytes.Clone(buf))
	}
	if inv != nil {
		inv.pending = nil
		if uint32(len(resp)) > respCap || !mod.Memory().Write(respPtr, resp) {
			inv.pending = resp
		}
	}
	stack[0] = uint64(uint32(len(resp)))
}

func hostTake(ctx context.Context, mod api.Module, stack []uint64) {
	respPtr, respCap := uint32(stack[0]), uint32(stack[1])
	inv := invocationFrom(ctx)
	if inv == nil || inv.pending == nil {
		stack[0] = 0
		return
	}
	n := uint32(len(inv.pending))
	if n <= respCap && mod.Memory().Write(respPtr, inv.pending) {
		inv.pending = nil
	}
	stack[0] = uint64(n)
}
