package goplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/configschema"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// crashGrace bounds how long a call that lost its connection waits for the kernel to say the process
// exited, to tell a crash (driver.crashed) from a connection that broke on its own.
const crashGrace = 2 * time.Second

// acquire returns the running instance, waiting through a restart until ctx ends.
func (d *Driver) acquire(ctx context.Context) (*instance, error) {
	for {
		d.mu.Lock()
		state, inst, ready, lastErr := d.state, d.cur, d.ready, d.lastErr
		d.mu.Unlock()
		switch {
		case state == StateDisabled:
			return nil, errcode.New(errcode.DriverDisabled, "driver %s is disabled", d.spec.Name)
		case inst != nil:
			select {
			case <-inst.exited: // dead but not yet marked: mark it, then wait for the restart
				d.markLost(inst)
				continue
			default:
				return inst, nil
			}
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, errcode.Wrap(ctx.Err(), errcode.DriverUnavailable, "driver %s is restarting after a crash (%s)", d.spec.Name, lastErr)
		}
	}
}

// call runs f on the running instance under the call timeout, and turns what went wrong on the
// host's side into its code: driver.disabled, driver.timeout, driver.crashed (the process died during
// the call) or driver.unavailable. A driver's own answer keeps its code. Every error leaving here is
// scrubbed of the secrets the host gave the driver, the causes it wraps included: the plane logs
// Error(), which prints the whole chain.
func call[T any](d *Driver, ctx context.Context, f func(context.Context, *instance) (T, error)) (T, error) {
	v, err := callUnscrubbed(d, ctx, f)
	if err != nil {
		return v, d.scrubbed(err)
	}
	return v, nil
}

func callUnscrubbed[T any](d *Driver, ctx context.Context, f func(context.Context, *instance) (T, error)) (T, error) {
	var zero T
	ctx, cancel := context.WithTimeout(ctx, d.opts.CallTimeout)
	defer cancel()
	inst, err := d.acquire(ctx)
	if err != nil {
		return zero, err
	}
	v, err := f(ctx, inst)
	if err == nil {
		d.crashes.Store(0)
		d.timeouts.Store(0)
		return v, nil
	}
	if !driver.IsTransport(err) {
		return zero, err
	}
	if d.disabled() {
		return zero, errcode.New(errcode.DriverDisabled, "driver %s was disabled during the call", d.spec.Name)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errcode.Has(err, errcode.DriverTimeout) {
		select {
		case <-inst.exited:
			return zero, d.crashed(inst, err)
		default:
		}
		d.timedOut(inst)
		return zero, errcode.Wrap(err, errcode.DriverTimeout, "driver %s did not answer within %s", d.spec.Name, d.opts.CallTimeout)
	}
	if ctx.Err() != nil { // the caller gave up
		return zero, errcode.Wrap(ctx.Err(), errcode.DriverUnavailable, "call to driver %s canceled", d.spec.Name)
	}
	grace := time.NewTimer(crashGrace)
	defer grace.Stop()
	select {
	case <-inst.exited:
		return zero, d.crashed(inst, err)
	case <-grace.C:
		return zero, err
	}
}

// timedOut counts a call that timed out on inst. After MaxTimeouts in a row the process is ended and
// restarted as after a crash (same backoff, config replayed): a driver that is alive but answers
// nothing would otherwise time out every call for good.
func (d *Driver) timedOut(inst *instance) {
	n := d.timeouts.Add(1)
	if d.opts.MaxTimeouts < 0 || int(n) < d.opts.MaxTimeouts {
		return
	}
	d.mu.Lock()
	mine := d.cur == inst && d.state == StateRunning
	d.mu.Unlock()
	if !mine || !d.markLost(inst) {
		return // already restarting or disabled
	}
	d.mu.Lock()
	d.lastErr = fmt.Sprintf("%d calls in a row timed out; restarted", n)
	inst.lostTo = errcode.DriverTimeout
	d.mu.Unlock()
	d.log.Error("driver timed out calls in a row; restarting it", "pid", inst.pid, "timeouts_in_a_row", n)
	// The watcher sees the exit and restarts; ending the process may take go-plugin's grace period,
	// which the caller does not wait for.
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		inst.kill()
	}()
}

func (d *Driver) crashed(inst *instance, cause error) error {
	d.markLost(inst)
	return errcode.Wrap(cause, errcode.DriverCrashed, "driver %s crashed during the call; it is being restarted", d.spec.Name)
}

func (d *Driver) disabled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state == StateDisabled
}

// scrubbed returns err with the secrets the host gave the driver removed from every error of its
// chain: messages, details and the causes wrapped. Coded errors and transport errors are rebuilt
// scrubbed (so codes and errors.As still work); any other cause whose text holds a secret is replaced
// by its scrubbed text, and one that holds none is kept as it is (context errors stay comparable).
func (d *Driver) scrubbed(err error) error { return scrubChain(&d.scrub, err) }

func scrubChain(sc *driver.Scrubber, err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *errcode.Error:
		out := &errcode.Error{Code: e.Code, Message: sc.Scrub(e.Message), Err: scrubChain(sc, e.Err)}
		for k, v := range e.Details {
			out.With(k, scrubValue(sc, v))
		}
		return out
	case *driver.TransportError:
		return &driver.TransportError{Code: e.Code, Message: sc.Scrub(e.Message)}
	}
	text := err.Error()
	clean := sc.Scrub(text)
	if inner := errors.Unwrap(err); inner != nil {
		return &scrubbedError{text: clean, err: scrubChain(sc, inner)}
	}
	if clean != text {
		return &scrubbedError{text: clean}
	}
	return err
}

// scrubValue scrubs one detail: a string as text, anything else through its JSON form.
func scrubValue(sc *driver.Scrubber, v any) any {
	if s, ok := v.(string); ok {
		return sc.Scrub(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "[unprintable detail]"
	}
	if clean := sc.Scrub(string(b)); clean != string(b) {
		return clean
	}
	return v
}

// scrubbedError stands for a cause whose text held a secret: its text scrubbed, and what it wrapped,
// scrubbed the same way.
type scrubbedError struct {
	text string
	err  error
}

func (e *scrubbedError) Error() string { return e.text }
func (e *scrubbedError) Unwrap() error { return e.err }

// setConfig checks cfg's settings against the driver's schema, sends cfg to the driver and, once
// accepted, keeps it to replay after a restart. The credential is registered for scrubbing before it
// leaves the host.
func (d *Driver) setConfig(ctx context.Context, cfg driver.Config) error {
	d.scrub.Add(cfg.Credential)
	_, err := call(d, ctx, func(ctx context.Context, i *instance) (struct{}, error) {
		schema, err := i.base.ConfigSchema(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if err := configschema.Validate(schema, cfg.Settings); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, i.base.SetConfig(ctx, cfg)
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.config = &cfg
	d.mu.Unlock()
	return nil
}
