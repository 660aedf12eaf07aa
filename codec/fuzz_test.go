package codec_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/codec"
)

// FuzzParseKeys: the key-file parser never panics; what it accepts is a
// ring of 32-byte keys that round-trips through its hex form, and what it
// refuses is ErrBadKey.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 32)))
	f.Add(bytes.Repeat([]byte{0x42}, 32))
	f.Add([]byte("# comment\n" + strings.Repeat("0", 64) + "\n" + strings.Repeat("1", 64) + "\n"))
	f.Add([]byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		ring, err := codec.ParseKeys(data)
		if err != nil {
			if !errors.Is(err, codec.ErrBadKey) {
				t.Fatalf("error %v is not ErrBadKey", err)
			}
			return
		}
		if ring.Len() == 0 {
			t.Fatal("accepted an empty ring")
		}
		if _, err := codec.New(ring); err != nil {
			t.Fatalf("New on an accepted ring: %v", err)
		}
		if ring.Primary() != ring.IDs()[0] {
			t.Fatalf("primary %s is not the first key %v", ring.Primary(), ring.IDs())
		}
		for _, id := range ring.IDs() {
			if _, err := hex.DecodeString(id); err != nil || len(id) != 16 {
				t.Fatalf("key id %q is not 16 hex characters", id)
			}
		}
	})
}
