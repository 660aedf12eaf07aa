package codec

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of an AES-256 key in bytes.
const KeySize = 32

// ErrBadKey: a key file or variable that holds no valid key.
var ErrBadKey = errors.New("bad codec key")

// KeyRing is the keys a Codec knows, the primary first. Build one with
// ParseKeys or NewKeyRing.
type KeyRing struct {
	keys []key
}

type key struct {
	id     string
	secret []byte
}

// KeyID is the id a key's payloads carry: the first 8 bytes of
// SHA-256("gleaner-codec-key-id\x00" || key), in hex. It names a key
// without revealing it.
func KeyID(secret []byte) string {
	h := sha256.New()
	h.Write([]byte("gleaner-codec-key-id\x00"))
	h.Write(secret)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// NewKeyRing makes a key ring of secrets, each KeySize bytes, the first
// the primary.
func NewKeyRing(secrets ...[]byte) (KeyRing, error) {
	var r KeyRing
	if len(secrets) == 0 {
		return r, fmt.Errorf("%w: no key", ErrBadKey)
	}
	seen := map[string]int{}
	for i, s := range secrets {
		if len(s) != KeySize {
			return KeyRing{}, fmt.Errorf("%w: key %d is %d bytes, want %d", ErrBadKey, i+1, len(s), KeySize)
		}
		id := KeyID(s)
		if j, ok := seen[id]; ok {
			return KeyRing{}, fmt.Errorf("%w: key %d repeats key %d", ErrBadKey, i+1, j+1)
		}
		seen[id] = i
		r.keys = append(r.keys, key{id: id, secret: bytes.Clone(s)})
	}
	return r, nil
}

// Primary is the id of the key that encrypts ("" for an empty ring).
func (r KeyRing) Primary() string {
	if len(r.keys) == 0 {
		return ""
	}
	return r.keys[0].id
}

// IDs are the ids of the keys, the primary first.
func (r KeyRing) IDs() []string {
	ids := make([]string, len(r.keys))
	for i, k := range r.keys {
		ids[i] = k.id
	}
	return ids
}

// Len is the number of keys.
func (r KeyRing) Len() int { return len(r.keys) }

// keyFormats says what a key may look like, for errors.
const keyFormats = "want 32 raw bytes, or one key a line as 64 hex characters or base64 of 32 bytes (openssl rand -hex 32)"

// ParseKeys reads a key file or variable: either exactly 32 raw bytes
// (one key, binary: head -c 32 /dev/urandom), or text with one key a line, each 64 hex characters or
// standard or URL-safe base64 (padded or not) of 32 bytes; white space
// around a line, blank lines and lines starting with # are ignored. The
// first key is the primary, which encrypts; the others only decrypt.
// Errors are ErrBadKey and name the line, never the key.
func ParseKeys(data []byte) (KeyRing, error) {
	if len(data) == KeySize && !isKeyText(data) {
		return NewKeyRing(data)
	}
	var secrets [][]byte
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseKeyLine(line)
		if err != nil {
			return KeyRing{}, fmt.Errorf("%w: line %d: %v; %s", ErrBadKey, i+1, err, keyFormats)
		}
		secrets = append(secrets, s)
	}
	if len(secrets) == 0 {
		return KeyRing{}, fmt.Errorf("%w: no key found (%d bytes); %s", ErrBadKey, len(data), keyFormats)
	}
	return NewKeyRing(secrets...)
}

// isKeyText reports whether 32 bytes are printable text: then they are
// parsed as text (and refused: a text key is 43 characters or more), so
// that 32 hex characters, half a key, are never taken for 32 raw bytes.
// A random raw key is all printable with probability (95/256)^32 < 1e-13.
func isKeyText(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c > 0x7e) && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

func parseKeyLine(line string) ([]byte, error) {
	if len(line) == 2*KeySize {
		if b, err := hex.DecodeString(line); err == nil {
			return b, nil
		}
	}
	decoded := -1
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(line); err == nil {
			if len(b) == KeySize {
				return b, nil
			}
			decoded = len(b)
		}
	}
	switch {
	case isHex(line):
		return nil, fmt.Errorf("%d hex characters", len(line))
	case decoded >= 0:
		return nil, fmt.Errorf("base64 of %d bytes", decoded)
	}
	return nil, fmt.Errorf("%d characters, neither hex nor base64", len(line))
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return s != ""
}
