package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload, as in Temporal's encryption sample.
const (
	// MetadataEncodingEncrypted is the "encoding" of an encrypted payload.
	MetadataEncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key that sealed it (KeyID).
	MetadataKeyID = "encryption-key-id"
)

// NonceSize is the size of the random nonce that starts each sealed
// payload.
const NonceSize = 12

// Errors of Decode, for errors.Is.
var (
	// ErrUnknownKey: the payload was sealed with a key the ring lacks.
	ErrUnknownKey = errors.New("payload encrypted with a key not in the key ring")
	// ErrTampered: the payload fails authentication: altered, truncated,
	// or sealed with another key of the same id.
	ErrTampered = errors.New("encrypted payload fails authentication (altered or corrupt)")
)

// Codec encrypts and decrypts payloads (converter.PayloadCodec); see the
// package documentation. It is safe for concurrent use.
type Codec struct {
	primary string
	aeads   map[string]cipher.AEAD
	ids     []string
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New makes a codec over ring, which must hold a key.
func New(ring KeyRing) (*Codec, error) {
	if ring.Len() == 0 {
		return nil, fmt.Errorf("%w: no key", ErrBadKey)
	}
	c := &Codec{primary: ring.Primary(), aeads: map[string]cipher.AEAD{}, ids: ring.IDs()}
	for _, k := range ring.keys {
		block, err := aes.NewCipher(k.secret)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
		}
		c.aeads[k.id] = gcm
	}
	return c, nil
}

// DataConverter is Temporal's default data converter with c applied to
// every payload it writes and reads.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// PrimaryKeyID is the id of the key Encode uses.
func (c *Codec) PrimaryKeyID() string { return c.primary }

// additionalData binds a sealed payload to the key id it names, so that
// the id cannot be swapped without failing authentication.
func additionalData(keyID string) []byte {
	return []byte("gleaner-codec-v1\x00" + keyID)
}

// Encode seals each payload, whole (data and metadata), with the primary
// key and a fresh random nonce.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.primary]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: encoding payload %d: %w", i, err)
		}
		sealed := make([]byte, NonceSize, NonceSize+len(plain)+aead.Overhead())
		if _, err := rand.Read(sealed); err != nil {
			return nil, fmt.Errorf("codec: nonce: %w", err)
		}
		sealed = aead.Seal(sealed, sealed, plain, additionalData(c.primary))
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(MetadataEncodingEncrypted),
				MetadataKeyID:              []byte(c.primary),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode opens each encrypted payload with the key its metadata names;
// a payload that is not encrypted passes unchanged. Errors are
// ErrUnknownKey or ErrTampered, with the key id.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != MetadataEncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.aeads[id]
		if !ok {
			return nil, fmt.Errorf("codec: payload %d: key id %q: %w (the ring has %s): add the key it was written with to the key file, after the primary",
				i, id, ErrUnknownKey, strings.Join(c.ids, ", "))
		}
		data := p.GetData()
		if len(data) < NonceSize+aead.Overhead() {
			return nil, fmt.Errorf("codec: payload %d: key id %s: %w: %d bytes, too short", i, id, ErrTampered, len(data))
		}
		plain, err := aead.Open(nil, data[:NonceSize], data[NonceSize:], additionalData(id))
		if err != nil {
			return nil, fmt.Errorf("codec: payload %d: key id %s: %w", i, id, ErrTampered)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("codec: payload %d: key id %s: decrypted data is no payload: %w", i, id, err)
		}
		out[i] = &dec
	}
	return out, nil
}
