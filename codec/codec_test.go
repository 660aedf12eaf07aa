package codec_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/gleaner-hpc/gleaner/codec"
)

func newKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, codec.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func newCodec(t testing.TB, keys ...[]byte) *codec.Codec {
	t.Helper()
	ring, err := codec.NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.New(ring)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func payloads(t testing.TB, values ...any) []*commonpb.Payload {
	t.Helper()
	ps, err := converter.GetDefaultDataConverter().ToPayloads(values...)
	if err != nil {
		t.Fatal(err)
	}
	return ps.GetPayloads()
}

func TestRoundTrip(t *testing.T) {
	c := newCodec(t, newKey(t))
	in := payloads(t, map[string]string{"token": "s3cret-value"}, 42, nil, []byte{0, 1, 2}, "")
	enc, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range enc {
		if got := string(p.Metadata[converter.MetadataEncoding]); got != codec.MetadataEncodingEncrypted {
			t.Errorf("payload %d encoding %q, want %q", i, got, codec.MetadataEncodingEncrypted)
		}
		if got := string(p.Metadata[codec.MetadataKeyID]); got != c.PrimaryKeyID() {
			t.Errorf("payload %d key id %q, want the primary %q", i, got, c.PrimaryKeyID())
		}
		if bytes.Contains(p.Data, []byte("s3cret-value")) || bytes.Contains(p.Data, []byte("json/plain")) {
			t.Errorf("payload %d holds its plain text or metadata", i)
		}
	}
	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if !proto.Equal(in[i], dec[i]) {
			t.Errorf("payload %d: decode(encode(p)) = %v, want %v", i, dec[i], in[i])
		}
	}
	// A fresh nonce each time: the same payload never seals the same.
	again, _ := c.Encode(in[:1])
	if bytes.Equal(again[0].Data, enc[0].Data) {
		t.Error("the same payload encoded twice gives the same ciphertext, want a fresh nonce")
	}
}

func TestDataConverterRoundTrip(t *testing.T) {
	dc := newCodec(t, newKey(t)).DataConverter()
	type spec struct {
		Command []string
		Env     map[string]string
	}
	in := spec{Command: []string{"train"}, Env: map[string]string{"WANDB_API_KEY": "k-123"}}
	p, err := dc.ToPayload(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.Data, []byte("k-123")) {
		t.Fatal("the data converter's payload holds the secret in clear")
	}
	var out spec
	if err := dc.FromPayload(p, &out); err != nil || out.Env["WANDB_API_KEY"] != "k-123" {
		t.Fatalf("FromPayload = %+v, %v", out, err)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	c := newCodec(t, newKey(t))
	enc, err := c.Encode(payloads(t, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, codec.NonceSize, len(enc[0].Data) - 1} {
		bad := proto.Clone(enc[0]).(*commonpb.Payload)
		bad.Data[i] ^= 0x01
		_, err := c.Decode([]*commonpb.Payload{bad})
		if !errors.Is(err, codec.ErrTampered) || !strings.Contains(err.Error(), c.PrimaryKeyID()) {
			t.Errorf("byte %d flipped: err = %v, want ErrTampered naming the key id", i, err)
		}
	}
	short := proto.Clone(enc[0]).(*commonpb.Payload)
	short.Data = short.Data[:5]
	if _, err := c.Decode([]*commonpb.Payload{short}); !errors.Is(err, codec.ErrTampered) {
		t.Errorf("truncated: err = %v, want ErrTampered", err)
	}
	// The key id is bound to the ciphertext: relabelling with another key
	// of the ring fails too.
	other := newKey(t)
	c2 := newCodec(t, newKey(t), other)
	enc2, _ := c2.Encode(payloads(t, "x"))
	enc2[0].Metadata[codec.MetadataKeyID] = []byte(codec.KeyID(other))
	if _, err := c2.Decode(enc2); !errors.Is(err, codec.ErrTampered) {
		t.Errorf("relabelled key id: err = %v, want ErrTampered", err)
	}
}

func TestUnknownKeyAndRotation(t *testing.T) {
	oldKey, newK := newKey(t), newKey(t)
	old := newCodec(t, oldKey)
	enc, _ := old.Encode(payloads(t, "written with the old key"))

	if _, err := newCodec(t, newK).Decode(enc); !errors.Is(err, codec.ErrUnknownKey) ||
		!strings.Contains(err.Error(), codec.KeyID(oldKey)) {
		t.Errorf("decode without the old key: err = %v, want ErrUnknownKey naming %s", err, codec.KeyID(oldKey))
	}
	rotated := newCodec(t, newK, oldKey)
	dec, err := rotated.Decode(enc)
	if err != nil {
		t.Fatalf("rotated ring decoding an old payload: %v", err)
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &s); err != nil || s != "written with the old key" {
		t.Errorf("decoded %q, %v", s, err)
	}
	fresh, _ := rotated.Encode(payloads(t, "y"))
	if got := string(fresh[0].Metadata[codec.MetadataKeyID]); got != codec.KeyID(newK) {
		t.Errorf("rotated ring encodes with %s, want the new primary %s", got, codec.KeyID(newK))
	}
}

func TestPlainPayloadsPassThrough(t *testing.T) {
	c := newCodec(t, newKey(t))
	in := payloads(t, "written before encryption", 7)
	dec, err := c.Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if dec[i] != in[i] {
			t.Errorf("plain payload %d changed by Decode", i)
		}
	}
}

func TestParseKeys(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	for name, c := range map[string]struct {
		data []byte
		ids  []string
	}{
		"raw":               {k1, []string{codec.KeyID(k1)}},
		"hex":               {[]byte(hex.EncodeToString(k1) + "\n"), []string{codec.KeyID(k1)}},
		"HEX":               {[]byte(strings.ToUpper(hex.EncodeToString(k1))), []string{codec.KeyID(k1)}},
		"base64":            {[]byte(base64.StdEncoding.EncodeToString(k1)), []string{codec.KeyID(k1)}},
		"base64 url no pad": {[]byte(base64.RawURLEncoding.EncodeToString(k1)), []string{codec.KeyID(k1)}},
		"ring with comments": {[]byte(fmt.Sprintf("# new key first\n  %x  \n\n# the old one\n%s\n", k2, base64.StdEncoding.EncodeToString(k1))),
			[]string{codec.KeyID(k2), codec.KeyID(k1)}},
	} {
		ring, err := codec.ParseKeys(c.data)
		if err != nil || strings.Join(ring.IDs(), ",") != strings.Join(c.ids, ",") {
			t.Errorf("%s: ids %v, %v; want %v", name, ring.IDs(), err, c.ids)
		}
	}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":          {nil, "no key"},
		"comments only":  {[]byte("# nothing\n"), "no key"},
		"short hex":      {[]byte(strings.Repeat("ab", 16)), "32 hex characters"},
		"long base64":    {[]byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 48))), "base64 of 48 bytes"},
		"raw 31 bytes":   {k1[:31], "line 1"},
		"raw + newline":  {append(append([]byte{}, k1...), '\n'), "line"},
		"garbage line 3": {[]byte(fmt.Sprintf("%x\n\nnot a key!\n", k1)), "line 3"},
		"repeated":       {[]byte(fmt.Sprintf("%x\n%x\n", k1, k1)), "repeats"},
	} {
		_, err := codec.ParseKeys(c.data)
		if !errors.Is(err, codec.ErrBadKey) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrBadKey saying %q", name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), hex.EncodeToString(k1)) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
}

func postPayloads(t *testing.T, url, token, origin string, ps []*commonpb.Payload) (*http.Response, []*commonpb.Payload) {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out commonpb.Payloads
	if resp.StatusCode == http.StatusOK {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		if err := protojson.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatalf("response: %v: %s", err, buf.String())
		}
	}
	return resp, out.Payloads
}

func TestHTTPHandler(t *testing.T) {
	c := newCodec(t, newKey(t))
	const ui = "http://localhost:8233"
	srv := httptest.NewServer(codec.NewHTTPHandler(c, codec.HTTPOptions{Origins: []string{ui}, Token: "tok"}))
	defer srv.Close()

	plain := payloads(t, "over http")
	resp, enc := postPayloads(t, srv.URL+"/encode", "tok", ui, plain)
	if resp.StatusCode != http.StatusOK || len(enc) != 1 || string(enc[0].Metadata[converter.MetadataEncoding]) != codec.MetadataEncodingEncrypted {
		t.Fatalf("/encode: %s, %v", resp.Status, enc)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != ui {
		t.Errorf("Access-Control-Allow-Origin %q, want %q", got, ui)
	}
	resp, dec := postPayloads(t, srv.URL+"/decode", "tok", "", enc)
	if resp.StatusCode != http.StatusOK || len(dec) != 1 || !proto.Equal(dec[0], plain[0]) {
		t.Fatalf("/decode: %s, %v, want %v", resp.Status, dec, plain)
	}

	// Without the token, or with another: 401, nothing decoded.
	for _, tok := range []string{"", "wrong"} {
		if resp, _ := postPayloads(t, srv.URL+"/decode", tok, "", enc); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: %s, want 401", tok, resp.Status)
		}
	}
	// A tampered payload: 400 with the reason.
	enc[0].Data[len(enc[0].Data)-1] ^= 1
	if resp, _ := postPayloads(t, srv.URL+"/decode", "tok", "", enc); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("tampered: %s, want 400", resp.Status)
	}

	// The UI's preflight is answered without a token; another origin gets
	// no CORS headers.
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	req.Header.Set("Origin", ui)
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace")
	pre, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pre.Body.Close()
	if pre.StatusCode != http.StatusOK || !strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-Namespace") {
		t.Errorf("preflight: %s, headers %v", pre.Status, pre.Header)
	}
	req.Header.Set("Origin", "http://evil.example")
	pre, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pre.Body.Close()
	if pre.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin allowed: %v", pre.Header)
	}
}
