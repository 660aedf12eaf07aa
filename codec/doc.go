// Package codec encrypts the payloads Gleaner's workflows carry — campaign
// specs, trial parameters and environments, results, queries — so that a
// Temporal server (or Temporal Cloud) stores and shows only ciphertext.
//
// Codec is a converter.PayloadCodec: every payload is sealed with
// AES-256-GCM under a fresh random 12-byte nonce, its metadata reduced to
// encoding "binary/encrypted" and the id of the key that sealed it, as in
// Temporal's encryption sample. A KeyRing holds the keys: the first, the
// primary, encrypts; any of them decrypts, so keys rotate by putting the
// new key first and keeping the old ones until no history needs them.
// Payloads without the marker pass through Decode unchanged, so histories
// written before encryption was turned on still read.
//
// ParseKeys reads a key file (32 raw bytes, or lines of 64 hex characters
// or base64); NewHTTPHandler serves the codec to the Temporal web UI and
// CLI (a codec server), with CORS and an optional bearer token.
//
// What it does not hide: workflow ids and types, task queues, search
// attributes, failure messages' text, timings (docs/security.md).
//
// It imports the Temporal SDK's converter and API types only: no workflow,
// activity or client code, no logging, no files (callers read the key).
package codec
