package driver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// Handshake is the go-plugin handshake of every Lexicon driver. The cookie only keeps a driver from
// being started by hand by mistake; integrity is the host's business (the pinned sha256, checked
// before exec), never the cookie's.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		MagicCookieKey:   "LEXICON_DRIVER_PLUGIN",
		MagicCookieValue: "d1b7c4a2e9f04e6b8a3d5c7e1f2a4b6c",
	}
}

// ServeVersions is the go-plugin glue each contract's Serve calls, for a driver of kind. It offers the host the API versions
// that impl claims in Info and the contract supports (versions maps each to its plugin), sets the
// process's slog default to JSON on stderr (which the host forwards to its own log) with served's
// secrets scrubbed, and serves until the host ends the process.
func ServeVersions(impl Base, kind Kind, served *Served, versions map[int]plugin.Plugin) {
	info, err := impl.Info(context.Background())
	if err != nil {
		fatal("driver Info failed: %v", err)
	}
	if info.Kind != kind {
		fatal("driver %s says it is a %q driver but is served as %q", info.Name, info.Kind, kind)
	}
	sets := map[int]plugin.PluginSet{}
	for v, p := range versions {
		if slices.Contains(info.APIVersions, v) {
			sets[v] = plugin.PluginSet{string(info.Kind): p}
		}
	}
	if len(sets) == 0 {
		fatal("driver %s claims API versions %v; this SDK serves %v", info.Name, info.APIVersions, keys(versions))
	}
	stderr := os.Stderr // go-plugin replaces os.Stderr while serving; logs go to the real one
	slog.SetDefault(slog.New(NewLogHandler(stderr, &served.Scrubber, slog.LevelInfo)))
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake(),
		VersionedPlugins: sets,
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       info.Name,
			Level:      hclog.Info,
			Output:     &scrubWriter{w: stderr, scrub: &served.Scrubber},
			JSONFormat: true,
		}),
	})
}

func keys(m map[int]plugin.Plugin) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "lexicon driver: "+format+"\n", args...)
	os.Exit(1)
}

// NewLogHandler returns a slog handler writing the JSON lines go-plugin's host understands (@level,
// @message, @timestamp) to w, with every secret scrub knows replaced.
func NewLogHandler(w io.Writer, scrub *Scrubber, level slog.Leveler) slog.Handler {
	return slog.NewJSONHandler(&scrubWriter{w: w, scrub: scrub}, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
			case slog.LevelKey:
				return slog.String("@level", levelName(a.Value.Any()))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	})
}

func levelName(v any) string {
	l, ok := v.(slog.Level)
	if !ok {
		return "info"
	}
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warn"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}

// scrubWriter scrubs each write; slog and hclog write one whole record per Write.
type scrubWriter struct {
	w     io.Writer
	scrub *Scrubber
}

func (s *scrubWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.scrub.Scrub(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
