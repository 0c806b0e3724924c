package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clearTemporalEnv unsets the Temporal CLI's environment for the test.
func clearTemporalEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{envAddr, envTemporalAddress, envTemporalNamespace, envTemporalAPIKey, envTemporalTLS,
		envTemporalCert, envTemporalCertData, envTemporalKey, envTemporalKeyData, envTemporalCA, envTemporalCAData,
		envTemporalServerName, envTemporalNoVerify, envPostgres} {
		t.Setenv(name, "")
	}
}

func TestConnectionFlagsDefaultToTheTemporalCLIsEnvironment(t *testing.T) {
	clearTemporalEnv(t)
	t.Setenv(envTemporalAddress, "ns.tmprl.cloud:7233")
	t.Setenv(envAddr, "ignored:7233")
	t.Setenv(envTemporalNamespace, "ns.acct")
	t.Setenv(envTemporalAPIKey, "key-from-env")
	t.Setenv(envPostgres, "postgres://db/agents")
	o, err := parseFlags("wait", []string{"--thread", "t"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, connOptions{address: "ns.tmprl.cloud:7233", namespace: "ns.acct", apiKey: "key-from-env"}, o.conn)
	require.Equal(t, "postgres://db/agents", o.postgres)

	o, err = parseFlags("wait", []string{"--thread", "t", "--address", "other:7233", "-n", "flag-ns", "--api-key", "key-from-flag", "--postgres", "postgres://x/y"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, connOptions{address: "other:7233", namespace: "flag-ns", apiKey: "key-from-flag"}, o.conn)
	require.Equal(t, "postgres://x/y", o.postgres)
}

func TestConnectionFlagErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"empty namespace", nil, []string{"--namespace", ""}, "--namespace is empty"},
		{"certificate without key", nil, []string{"--tls-cert-path", "c.pem"}, "a client certificate needs its key"},
		{"key without certificate", nil, []string{"--tls-key-path", "k.pem"}, "a client certificate needs its key"},
		{"path and data", nil, []string{"--tls-ca-path", "ca.pem", "--tls-ca-data", "x"}, "exclude each other"},
		{"TLS refused with an API key", nil, []string{"--tls=false", "--api-key", "k"}, "--tls=false with TLS options"},
		{"bad boolean in the environment", map[string]string{envTemporalTLS: "maybe"}, nil, `$TEMPORAL_TLS="maybe" is not a boolean`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearTemporalEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, stderr := runCmd(t.Context(), append([]string{"status", "--thread", "t"}, tc.args...)...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing CA file", []string{"--tls-ca-path", filepath.Join(dir, "missing.pem")}, "--tls-ca-path"},
		{"CA file without a certificate", []string{"--tls-ca-path", notPEM}, "holds no PEM certificate"},
		{"certificate that is not one", []string{"--tls-cert-data", "x", "--tls-key-data", "y"}, "the client certificate and key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearTemporalEnv(t)
			code, _, stderr := runCmd(t.Context(), append([]string{"status", "--thread", "t", "--address", "127.0.0.1:1"}, tc.args...)...)
			require.Equal(t, exitError, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}

// A gRPC-over-TLS endpoint that records what reached it: TLS with the
// given CA and client certificate, and the API key as a bearer token.
// The commands talk to it as to Temporal Cloud (it answers no gRPC, so the
// command then fails); without the CA the handshake fails and nothing
// reaches it.
func TestTLSAndAPIKeyReachTheServer(t *testing.T) {
	clearTemporalEnv(t)
	var (
		mu    sync.Mutex
		auth  []string
		peers int
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		if r.TLS != nil {
			peers += len(r.TLS.PeerCertificates)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	// The server's certificate is its own CA; the client's is self-signed
	// and trusted by the server.
	dir := t.TempDir()
	caPath := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.TLS.Certificates[0].Certificate[0]}), 0o600))
	certPath, keyPath, clientCert := clientCertificate(t, dir)
	pool := x509.NewCertPool()
	pool.AddCert(clientCert)
	srv.TLS.ClientCAs, srv.TLS.ClientAuth = pool, tls.VerifyClientCertIfGiven
	addr := strings.TrimPrefix(srv.URL, "https://")

	code, _, stderr := runCmd(t.Context(), "status", "--thread", "t", "--address", addr, "--api-key", "secret-key",
		"--tls-ca-path", caPath, "--tls-server-name", "example.com")
	require.Equal(t, exitError, code)
	require.NotContains(t, stderr, "secret-key", "the API key was printed")
	mu.Lock()
	require.NotEmpty(t, auth, "no request reached the server: %s", stderr)
	require.Equal(t, "Bearer secret-key", auth[0])
	require.Zero(t, peers)
	auth = nil
	mu.Unlock()

	t.Setenv(envTemporalCert, certPath)
	t.Setenv(envTemporalKey, keyPath)
	t.Setenv(envTemporalCA, caPath)
	code, _, stderr = runCmd(t.Context(), "status", "--thread", "t", "--address", addr, "--tls-server-name", "example.com")
	require.Equal(t, exitError, code)
	mu.Lock()
	require.NotEmpty(t, auth, "no request reached the server: %s", stderr)
	require.Empty(t, auth[0], "an API key was sent that was never given")
	require.Positive(t, peers, "the client certificate did not reach the server")
	auth = nil
	mu.Unlock()

	clearTemporalEnv(t)
	code, _, stderr = runCmd(t.Context(), "status", "--thread", "t", "--address", addr, "--tls")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, "certificate")
	mu.Lock()
	require.Empty(t, auth, "a request reached the server over an unverified connection")
	mu.Unlock()
}

// clientCertificate writes a self-signed client certificate and its key
// in dir, and returns their paths and the certificate.
func clientCertificate(t *testing.T, dir string) (certPath, keyPath string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "worker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certPath, keyPath = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	require.NoError(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600))
	return certPath, keyPath, cert
}
