package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"go.temporal.io/sdk/client"
)

// Environment variables of the connection flags: the Temporal CLI's, so
// that a shell set up for `temporal` (a Temporal Cloud namespace, say)
// works for this command too.
const (
	envTemporalAddress    = "TEMPORAL_ADDRESS"
	envTemporalNamespace  = "TEMPORAL_NAMESPACE"
	envTemporalAPIKey     = "TEMPORAL_API_KEY"
	envTemporalTLS        = "TEMPORAL_TLS"
	envTemporalCert       = "TEMPORAL_TLS_CERT"
	envTemporalCertData   = "TEMPORAL_TLS_CERT_DATA"
	envTemporalKey        = "TEMPORAL_TLS_KEY"
	envTemporalKeyData    = "TEMPORAL_TLS_KEY_DATA"
	envTemporalCA         = "TEMPORAL_TLS_CA"
	envTemporalCAData     = "TEMPORAL_TLS_CA_DATA"
	envTemporalServerName = "TEMPORAL_TLS_SERVER_NAME"
	envTemporalNoVerify   = "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"
	// envPostgres is the default of --postgres.
	envPostgres = "AGENTGRAPH_TEMPORAL_POSTGRES"
)

// defaultNamespace is the namespace when neither --namespace nor
// $TEMPORAL_NAMESPACE gives one.
const defaultNamespace = "default"

// connOptions are the flags that say how to reach Temporal, named as the
// Temporal CLI names them, each defaulting to the CLI's environment
// variable.
type connOptions struct {
	address, namespace, apiKey string
	tls                        optBool
	certPath, certData         string
	keyPath, keyData           string
	caPath, caData             string
	serverName                 string
	noVerify                   optBool
	// envErr is an environment variable that could not be parsed.
	envErr error
}

// optBool is a boolean flag that knows whether it was set.
type optBool struct{ set, v bool }

func (b *optBool) String() string {
	if b == nil {
		return "false"
	}
	return strconv.FormatBool(b.v)
}

func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.v = true, v
	return nil
}

func (b *optBool) IsBoolFlag() bool { return true }

// envOr returns the environment variable name, or def when it is unset or
// empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// register defines the connection flags on fs.
func (c *connOptions) register(fs *flag.FlagSet) {
	address := envOr(envTemporalAddress, envOr(envAddr, defaultAddr))
	fs.StringVar(&c.address, "address", address, "`HOST:PORT` of the Temporal frontend (default $"+envTemporalAddress+", else $"+envAddr+", else "+defaultAddr+")")
	fs.StringVar(&c.address, "addr", address, "`HOST:PORT`: the same as --address")
	namespace := envOr(envTemporalNamespace, defaultNamespace)
	fs.StringVar(&c.namespace, "namespace", namespace, "Temporal `namespace` (default $"+envTemporalNamespace+", else default)")
	fs.StringVar(&c.namespace, "n", namespace, "`namespace`: the same as --namespace")
	fs.StringVar(&c.apiKey, "api-key", os.Getenv(envTemporalAPIKey), "API `key` (Temporal Cloud; default $"+envTemporalAPIKey+", which keeps it out of the process list); turns TLS on")
	fs.Var(&c.tls, "tls", "use TLS; on when an API key or any --tls-* option is given, --tls=false to refuse (default $"+envTemporalTLS+")")
	fs.StringVar(&c.certPath, "tls-cert-path", os.Getenv(envTemporalCert), "`path` of the x509 client certificate, for mTLS (default $"+envTemporalCert+")")
	fs.StringVar(&c.certData, "tls-cert-data", os.Getenv(envTemporalCertData), "the x509 client certificate `PEM`, instead of --tls-cert-path (default $"+envTemporalCertData+")")
	fs.StringVar(&c.keyPath, "tls-key-path", os.Getenv(envTemporalKey), "`path` of the client certificate's private key (default $"+envTemporalKey+")")
	fs.StringVar(&c.keyData, "tls-key-data", os.Getenv(envTemporalKeyData), "the private key `PEM`, instead of --tls-key-path (default $"+envTemporalKeyData+")")
	fs.StringVar(&c.caPath, "tls-ca-path", os.Getenv(envTemporalCA), "`path` of the server's CA certificate (default $"+envTemporalCA+"; else the system's roots)")
	fs.StringVar(&c.caData, "tls-ca-data", os.Getenv(envTemporalCAData), "the server's CA certificate `PEM`, instead of --tls-ca-path (default $"+envTemporalCAData+")")
	fs.StringVar(&c.serverName, "tls-server-name", os.Getenv(envTemporalServerName), "server `name` to verify instead of the address's host (default $"+envTemporalServerName+")")
	fs.Var(&c.noVerify, "tls-disable-host-verification", "do not verify the server's certificate (testing only; default $"+envTemporalNoVerify+")")
	for _, e := range []struct {
		name string
		b    *optBool
	}{{envTemporalTLS, &c.tls}, {envTemporalNoVerify, &c.noVerify}} {
		if v := os.Getenv(e.name); v != "" {
			if err := e.b.Set(v); err != nil {
				c.envErr = fmt.Errorf("$%s=%q is not a boolean", e.name, v)
			}
		}
	}
}

// check reports options that contradict each other.
func (c *connOptions) check() error {
	switch {
	case c.envErr != nil:
		return c.envErr
	case c.certPath != "" && c.certData != "":
		return errors.New("--tls-cert-path and --tls-cert-data exclude each other")
	case c.keyPath != "" && c.keyData != "":
		return errors.New("--tls-key-path and --tls-key-data exclude each other")
	case c.caPath != "" && c.caData != "":
		return errors.New("--tls-ca-path and --tls-ca-data exclude each other")
	case (c.certPath != "" || c.certData != "") != (c.keyPath != "" || c.keyData != ""):
		return errors.New("a client certificate needs its key, and a key its certificate (--tls-cert-path, --tls-key-path)")
	case c.tls.set && !c.tls.v && c.tlsOptions():
		return errors.New("--tls=false with TLS options (--api-key or --tls-*)")
	}
	return nil
}

// tlsOptions reports whether an option that implies TLS is given.
func (c *connOptions) tlsOptions() bool {
	return c.apiKey != "" || c.certPath != "" || c.certData != "" || c.keyPath != "" || c.keyData != "" ||
		c.caPath != "" || c.caData != "" || c.serverName != "" || c.noVerify.v
}

// clientOptions returns the Temporal client options of c.
func (c *connOptions) clientOptions() (client.Options, error) {
	if err := c.check(); err != nil {
		return client.Options{}, err
	}
	opts := client.Options{HostPort: c.address, Namespace: c.namespace}
	if c.apiKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.apiKey)
	}
	if c.tls.set && !c.tls.v || !c.tls.set && !c.tlsOptions() {
		return opts, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.serverName, InsecureSkipVerify: c.noVerify.v}
	certPEM, err := pemOf("--tls-cert-path", c.certPath, c.certData)
	if err != nil {
		return opts, err
	}
	if certPEM != nil {
		keyPEM, err := pemOf("--tls-key-path", c.keyPath, c.keyData)
		if err != nil {
			return opts, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return opts, fmt.Errorf("the client certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	caPEM, err := pemOf("--tls-ca-path", c.caPath, c.caData)
	if err != nil {
		return opts, err
	}
	if caPEM != nil {
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(caPEM) {
			return opts, errors.New("the server CA certificate (--tls-ca-path) holds no PEM certificate")
		}
	}
	opts.ConnectionOptions.TLS = cfg
	return opts, nil
}

// pemOf returns data, or the file at path; nil for neither.
func pemOf(flagName, path, data string) ([]byte, error) {
	switch {
	case data != "":
		return []byte(data), nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		return b, nil
	}
	return nil, nil
}
