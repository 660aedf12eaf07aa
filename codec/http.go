package codec

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"
)

// MaxRequestBytes bounds the body of a codec server request.
const MaxRequestBytes = 16 << 20

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// Origins are the web origins (scheme://host:port) of the Temporal UIs
	// allowed to call the handler from a browser (CORS); "*" allows any.
	// Empty: no CORS headers, so only non-browser clients (the temporal
	// CLI's --codec-endpoint) can use it.
	Origins []string
	// Token, when set, is required as "Authorization: Bearer <Token>" on
	// every /encode and /decode request.
	Token string
}

// NewHTTPHandler serves c as a Temporal codec server: POST .../encode and
// .../decode with a JSON Payloads body (converter.NewPayloadCodecHTTPHandler),
// answering CORS preflights for o.Origins and checking o.Token. Whoever
// can call it can decrypt: keep it behind a token, on loopback, or both.
func NewHTTPHandler(c *Codec, o HTTPOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && allowed(o.Origins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusOK)
				return
			}
		}
		if o.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(o.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gleaner codec"`)
				http.Error(w, "unauthorized: want Authorization: Bearer <token>", http.StatusUnauthorized)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
		inner.ServeHTTP(w, r)
	})
}

func allowed(origins []string, origin string) bool {
	for _, o := range origins {
		if o == "*" || strings.EqualFold(strings.TrimRight(o, "/"), origin) {
			return true
		}
	}
	return false
}
