package redact

import (
	"strings"
	"testing"
)

// benchOutput is a host_report-like output of about 4 KiB with a few things to redact.
var benchOutput = func() []byte {
	var b strings.Builder
	b.WriteString(`{"hostname":"web-01","kernel":"6.8.0-45-generic","boot_id":"3f1c2b9a-1234-4c5d-9e8f-0a1b2c3d4e5f","units":[`)
	for i := 0; i < 40; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"getty@tty1.service","state":"active","since":"2026-01-01T00:00:00Z","path":"/usr/lib/systemd/system/getty@.service"}`)
	}
	b.WriteString(`],"addresses":["10.0.0.7","fe80::1%eth0"],"admin":"ops@example.com","env":{"DB_PASSWORD":"hunter2"},"image":"sha256:` + hex64 + `"}`)
	return []byte(b.String())
}()

func BenchmarkJSON(b *testing.B) {
	b.SetBytes(int64(len(benchOutput)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := JSON(benchOutput); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTextPathological runs the rules over 64 KiB inputs built to stress each scanner.
func BenchmarkTextPathological(b *testing.B) {
	for name, s := range map[string]string{
		"at signs":  strings.Repeat("a@", 32<<10),
		"dots":      strings.Repeat("1.", 32<<10),
		"colons":    strings.Repeat("a:", 32<<10),
		"equals":    strings.Repeat("token=", 11<<10),
		"base64":    strings.Repeat("aB3/", 16<<10),
		"quotes":    strings.Repeat(`password="`, 6<<10),
		"emails":    strings.Repeat("x@y.example ", 5<<10),
		"addresses": strings.Repeat("10.0.0.1 ", 7<<10),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				Text(s)
			}
		})
	}
}
