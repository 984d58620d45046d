package services_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// manualTicker is a ticker the test drives: a tick is a value the test sends.
type manualTicker struct {
	ticks   chan time.Time
	every   time.Duration
	stopped chan struct{}
}

func newManualTicker() *manualTicker {
	return &manualTicker{ticks: make(chan time.Time), stopped: make(chan struct{})}
}

func (m *manualTicker) new(d time.Duration) (<-chan time.Time, func()) {
	m.every = d
	return m.ticks, func() { close(m.stopped) }
}

// steps returns a step that reports each run on ran, and the channel itself.
func steps() (func(context.Context), chan struct{}) {
	ran := make(chan struct{})
	return func(ctx context.Context) {
		select {
		case ran <- struct{}{}:
		case <-ctx.Done():
		}
	}, ran
}

func TestPeriodicRunsItsStepOnEachTick(t *testing.T) {
	tk := newManualTicker()
	step, ran := steps()
	p := &services.Periodic{Name: "test", Every: time.Minute, Step: step, NewTicker: tk.new}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tk.every != time.Minute {
		t.Fatalf("ticker of %s, want 1m", tk.every)
	}
	for range 3 {
		tk.ticks <- time.Now() // taken only by the loop, which then runs the step
		<-ran
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tk.stopped:
	default:
		t.Fatal("Stop returned before the ticker was stopped")
	}
}

func TestPeriodicWakeAndRunAtStart(t *testing.T) {
	tk := newManualTicker()
	step, ran := steps()
	wake := make(chan struct{})
	p := &services.Periodic{Name: "test", Every: time.Hour, Step: step, Wake: wake, RunAtStart: true, NewTicker: tk.new}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(t.Context())
	<-ran // the run at start, with no tick
	wake <- struct{}{}
	<-ran // the run a wake-up asked for
}

// Stop returns only once the loop's goroutine has returned: the step that was running saw its context
// end and returned before Stop did.
func TestPeriodicStopWaitsForTheLoop(t *testing.T) {
	tk := newManualTicker()
	entered, returned := make(chan struct{}), make(chan struct{})
	p := &services.Periodic{Name: "test", Every: time.Second, NewTicker: tk.new, Step: func(ctx context.Context) {
		close(entered)
		<-ctx.Done()
		close(returned)
	}}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	done := p.Done()
	tk.ticks <- time.Now()
	<-entered
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	for what, ch := range map[string]<-chan struct{}{"step": returned, "loop": done, "ticker": tk.stopped} {
		select {
		case <-ch:
		default:
			t.Fatalf("Stop returned before the %s ended", what)
		}
	}
	if p.Done() != nil {
		t.Fatal("a stopped service still reports a running loop")
	}
	// Stopped, it starts again.
	tk2 := newManualTicker()
	p.NewTicker = tk2.new
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A step that ignores its context keeps Stop waiting only as long as Stop's own context allows.
func TestPeriodicStopGivesUpWithItsContext(t *testing.T) {
	tk := newManualTicker()
	entered, release := make(chan struct{}), make(chan struct{})
	p := &services.Periodic{Name: "stuck", Every: time.Second, NewTicker: tk.new, Step: func(context.Context) {
		close(entered)
		<-release
	}}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	tk.ticks <- time.Now()
	<-entered
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := p.Stop(ctx)
	if !errcode.Has(err, errcode.InternalError) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want %s wrapping context.Canceled", err, errcode.InternalError)
	}
	close(release)
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-tk.stopped
}

// The context given to Start bounds the service's life too.
func TestPeriodicEndsWithItsStartContext(t *testing.T) {
	tk := newManualTicker()
	step, _ := steps()
	p := &services.Periodic{Name: "test", Every: time.Second, Step: step, NewTicker: tk.new}
	ctx, cancel := context.WithCancel(t.Context())
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := p.Done()
	cancel()
	<-done
	<-tk.stopped
}

func TestPeriodicRefusesMisuse(t *testing.T) {
	tk := newManualTicker()
	step, _ := steps()
	p := &services.Periodic{Name: "test", Every: time.Second, Step: step, NewTicker: tk.new}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatalf("stopping a service never started: %v", err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(t.Context())
	if err := p.Start(t.Context()); !errcode.Has(err, errcode.InternalError) {
		t.Fatalf("second start: %v", err)
	}
	for _, bad := range []*services.Periodic{{Name: "no interval", Step: step}, {Name: "no step", Every: time.Second}} {
		if err := bad.Start(t.Context()); !errcode.Has(err, errcode.InternalError) {
			t.Errorf("%s: %v", bad.Name, err)
		}
	}
}

// record is a service that notes its starts and stops in a shared log.
type record struct {
	name string
	log  *[]string
	fail error
}

func (r record) Start(context.Context) error {
	if r.fail != nil {
		return r.fail
	}
	*r.log = append(*r.log, "start "+r.name)
	return nil
}

func (r record) Stop(context.Context) error {
	*r.log = append(*r.log, "stop "+r.name)
	return nil
}

func TestGroupStartsInOrderAndStopsInReverse(t *testing.T) {
	var log []string
	g := services.Group{record{"a", &log, nil}, record{"b", &log, nil}, record{"c", &log, nil}}
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if len(log) != len(want) {
		t.Fatalf("got %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("got %v, want %v", log, want)
		}
	}
}

func TestGroupStopsWhatStartedWhenOneFails(t *testing.T) {
	var log []string
	boom := errors.New("boom")
	g := services.Group{record{"a", &log, nil}, record{"b", &log, nil}, record{"c", &log, boom}, record{"d", &log, nil}}
	if err := g.Start(t.Context()); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	want := []string{"start a", "start b", "stop b", "stop a"}
	if len(log) != len(want) {
		t.Fatalf("got %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("got %v, want %v", log, want)
		}
	}
}
