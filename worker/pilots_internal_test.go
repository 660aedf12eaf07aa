package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
)

// The files the pilots' agents read on the nodes: absolute, here, and
// named by their flag when not.
func TestNodeFiles(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("x"), 0o600))
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want []string // in the error; none: no error
		warn string
	}{
		{name: "none given", set: func(*Config) {}},
		{name: "an absolute CA that exists", set: func(c *Config) { c.TLS.CAFile = ca }},
		{name: "a relative CA", set: func(c *Config) { c.TLS.CAFile = "certs/ca.pem" },
			want: []string{"--tls-ca", "certs/ca.pem", "a relative path: the pilots' agents read it on the compute nodes: it must exist at the same path on every node, so give it as an absolute path"}},
		{name: "a missing key and cert", set: func(c *Config) {
			c.TLS.CertFile, c.TLS.KeyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		}, want: []string{"--tls-cert", "--tls-key", "no such file or directory: the pilots' agents read it on the compute nodes: it must exist at the same path on every node, and here"}},
		{name: "a missing codec key file", set: func(c *Config) { c.Codec.KeyFile = filepath.Join(dir, "codec.key") }, want: []string{"--codec-key-file"}},
		{name: "a relative allow-list", set: func(c *Config) { c.Trainers.AllowCommandFile = "allow.txt" }, want: []string{"--allow-command-file", "a relative path"}},
		{name: "a trainer missing here is warned of", set: func(c *Config) { c.Trainers.AllowCommands = []string{"/opt/nowhere/train", "/opt/**"} },
			warn: "warning: --allow-command /opt/nowhere/train: no such file or directory here; the pilots' trainers run it on the compute nodes, at this path on every node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.set(&cfg)
			var logs []string
			gleaner, err := nodeFiles(cfg, func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) })
			if len(tc.want) == 0 {
				require.NoError(t, err)
			} else {
				var fe *client.FieldError
				assert.True(t, errors.As(err, &fe), "a FieldError: %v", err)
				for _, w := range tc.want {
					assert.ErrorContains(t, err, w)
				}
			}
			assert.True(t, filepath.IsAbs(gleaner), gleaner)
			assert.Equal(t, tc.warn, strings.Join(logs, "\n"))
		})
	}
}

// The API key reaches the pilots in their environment, not their argv.
func TestAgentEnvCarriesTheSecretsArgsLeaveOut(t *testing.T) {
	c := client.Connection{HostPort: "login1:7233", APIKey: "k", Codec: client.CodecConfig{Key: "c"}}
	assert.Equal(t, []string{"TEMPORAL_API_KEY=k", "GLEANER_CODEC_KEY=c"}, agentEnv(c))
	assert.NotContains(t, strings.Join(c.Args(), " "), "k ")
	assert.Empty(t, agentEnv(client.Connection{}))
}

// A loopback --address is refused, naming --address, unless Slurm's
// nodes are this machine (a one-machine test cluster). Slurm's commands
// are scripts on PATH.
func TestNewPilotsRefusesALoopbackAddressTheNodesCannotReach(t *testing.T) {
	for _, tc := range []struct {
		addr, nodeAddr string
		refused        bool
	}{
		{"127.0.0.1:7233", "10.0.0.1", true},
		{"localhost:7233", "n001", true},
		{"127.0.0.1:7233", "127.0.0.1", false},
		{"10.0.0.250:7233", "10.0.0.1", false},
	} {
		bin := t.TempDir()
		for name, out := range map[string]string{
			"scontrol": `case "$2" in config) printf 'PreemptType = preempt/partition_prio\nSlurmctldParameters = preempt_send_user_signal\nSLURM_VERSION = 22.05.8\n';;
partition) echo 'PartitionName=glean Nodes=g1 PreemptMode=CANCEL State=UP GraceTime=30';; esac`,
			"sinfo": "echo 'g1|" + tc.nodeAddr + "'",
		} {
			require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+out+"\n"), 0o755))
		}
		t.Setenv("PATH", bin+":/usr/bin:/bin")
		cfg := DefaultConfig()
		cfg.HostPort = tc.addr
		cfg.DataDir = t.TempDir()
		require.NoError(t, cfg.Nodes.Set("slurm:partition=glean"))
		_, err := NewPilots(context.Background(), nil, cfg, nil)
		if !tc.refused {
			assert.NoError(t, err, tc.addr)
			continue
		}
		var fe *client.FieldError
		require.True(t, errors.As(err, &fe), "%v", err)
		assert.Equal(t, "address", fe.Field)
		assert.ErrorContains(t, err, "server "+tc.addr+": a loopback address")
	}
}
