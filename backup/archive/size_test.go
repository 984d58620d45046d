package archive

import (
	"bytes"
	"testing"

	"filippo.io/age"
)

// TestEncryptedSize: the length announced before an upload is the length age writes, for plaintexts
// around every chunk boundary and for two recipients, as a run has.
func TestEncryptedSize(t *testing.T) {
	var recips []age.Recipient
	for range 2 {
		id, _ := age.GenerateX25519Identity()
		recips = append(recips, id.Recipient())
	}
	hdr, err := headerLen(recips)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 2 * chunkSize, 3*chunkSize + 7, 1 << 20} {
		var b bytes.Buffer
		w, err := age.Encrypt(&b, recips...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := encryptedSize(hdr, int64(n)); got != int64(b.Len()) {
			t.Errorf("%d bytes: announced %d, age wrote %d", n, got, b.Len())
		}
	}
}
