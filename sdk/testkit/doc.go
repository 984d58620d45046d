// Package testkit is the scaffolding Lexicon's tests share, and that authors of words, recipes and
// drivers may use in theirs: an assertion on error codes, a concurrency-safe buffer, a manual clock, a
// folder no other user can swap (SafeDir), and waits that end on a signal rather than after a sleep.
//
//	func TestRefused(t *testing.T) {
//		_, err := d.GetRecords(ctx, "no-such-zone.example")
//		testkit.WantCode(t, err, errcode.DNSNotFound)
//	}
//
//	func TestLogged(t *testing.T) {
//		var log testkit.Buffer
//		go run(&log)
//		log.WaitFor(t, "listening") // returns as soon as the line is written
//	}
//
// A test never sleeps to let something happen: it waits on a channel (Wait), on a condition the code
// under test signals (Cond.Until), on text written to a Buffer (Buffer.WaitFor), or on a timer a Clock
// holds (Clock.Waiting). Each wait is bounded only so a hang fails with a message naming what never
// happened instead of the test binary's panic; see Wait for the bound.
//
// The package depends on the standard library and sdk/errcode alone, so every package of the module
// (the agent's and the plane's among them) and every outside author can import it from tests.
package testkit
