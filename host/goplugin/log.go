package goplugin

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
)

// hclogSlog gives go-plugin an hclog.Logger that writes to slog, scrubbing every secret the host has
// handed the driver from the message and every string argument. go-plugin logs the driver's stderr
// through it line by line, so this is where a credential a driver printed (a panic message, a
// provider SDK's debug line) would otherwise reach the plane's log.
type hclogSlog struct {
	log   *slog.Logger
	scrub *driver.Scrubber
	name  string
	args  []any
}

func newHCLog(l *slog.Logger, scrub *driver.Scrubber, name string) hclog.Logger {
	return &hclogSlog{log: l, scrub: scrub, name: name}
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *hclogSlog) Log(level hclog.Level, msg string, args ...any) {
	lvl := slogLevel(level)
	ctx := context.Background()
	if !h.log.Enabled(ctx, lvl) {
		return
	}
	all := append(append([]any{}, h.args...), args...)
	for i, a := range all {
		switch v := a.(type) {
		case string:
			all[i] = h.scrub.Scrub(v)
		case error:
			all[i] = h.scrub.Scrub(v.Error())
		case fmt.Stringer:
			all[i] = h.scrub.Scrub(v.String())
		case nil, bool, int, int64, float64:
		default: // maps and slices from a driver's JSON log line: keep their shape unless they hold a secret
			if text := fmt.Sprint(v); h.scrub.Scrub(text) != text {
				all[i] = h.scrub.Scrub(text)
			}
		}
	}
	h.log.Log(ctx, lvl, h.scrub.Scrub(msg), append([]any{"logger", h.name}, all...)...)
}

func (h *hclogSlog) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogSlog) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogSlog) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogSlog) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogSlog) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogSlog) enabled(l hclog.Level) bool {
	return h.log.Enabled(context.Background(), slogLevel(l))
}

func (h *hclogSlog) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hclogSlog) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hclogSlog) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hclogSlog) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hclogSlog) IsError() bool { return h.enabled(hclog.Error) }

func (h *hclogSlog) ImpliedArgs() []any { return h.args }

func (h *hclogSlog) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any{}, h.args...), args...)
	return &c
}

func (h *hclogSlog) Name() string { return h.name }

func (h *hclogSlog) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (h *hclogSlog) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

// SetLevel is ignored: the slog handler decides.
func (h *hclogSlog) SetLevel(hclog.Level) {}

func (h *hclogSlog) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (h *hclogSlog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hclogSlog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		h.Info(string(p))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ hclog.Logger = (*hclogSlog)(nil)
