package embedded

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/base/trust"
)

// TLSDir is the folder inside data_dir that holds the internode certificates.
const TLSDir = "tls"

// InternodeServerName is the name the server's internal services verify each other by.
const InternodeServerName = "intentq-internode"

// Internode certificate files inside TLSDir. The CA's key is not kept: a new pair is made when
// one is missing, expires within certRenewBefore, or is not private.
const (
	caFile   = "ca.pem"
	certFile = "node.pem"
	keyFile  = "node.key"
)

const (
	certLifetime    = 5 * 365 * 24 * time.Hour
	certRenewBefore = 30 * 24 * time.Hour
)

// internodeTLS are the files of the embedded server's internode mTLS: every internal service
// (internal frontend, history, matching, worker) accepts only clients presenting a certificate
// signed by CA, and presents Cert itself.
type internodeTLS struct {
	CA, Cert, Key string
}

// ensureInternodeTLS returns the internode certificate files in dir (0700), creating a new
// self-signed CA and a node certificate when they are missing, unusable, about to expire or
// readable by others.
func ensureInternodeTLS(dir string) (internodeTLS, error) {
	files := internodeTLS{CA: filepath.Join(dir, caFile), Cert: filepath.Join(dir, certFile), Key: filepath.Join(dir, keyFile)}
	if err := files.usable(time.Now()); err == nil {
		return files, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return files, fmt.Errorf("internode TLS folder %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return files, fmt.Errorf("internode TLS folder %s: %w", dir, err)
	}
	if err := files.create(time.Now()); err != nil {
		return files, fmt.Errorf("internode TLS in %s: %w", dir, err)
	}
	return files, nil
}

// usable checks that the files load, that the node certificate is signed by the CA and valid
// for a while yet, and that none is readable by others.
func (f internodeTLS) usable(now time.Time) error {
	for _, p := range []string{filepath.Dir(f.Key), f.CA, f.Cert, f.Key} {
		if err := trust.CheckPrivate(p); err != nil {
			return err
		}
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate")
	}
	if leaf.NotAfter.Before(now.Add(certRenewBefore)) {
		return errors.New("node certificate expires soon")
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: InternodeServerName, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	return err
}

// create writes a new CA certificate and a node certificate (server and client use) with its
// key; the CA's key is dropped.
func (f internodeTLS) create(now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "intentq internode CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	nodeKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	nodeTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: InternodeServerName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{InternodeServerName},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	nodeDER, err := x509.CreateCertificate(rand.Reader, nodeTmpl, ca, &nodeKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(nodeKey)
	if err != nil {
		return err
	}
	for _, w := range []struct {
		path, kind string
		der        []byte
	}{
		{f.Key, "EC PRIVATE KEY", keyDER},
		{f.Cert, "CERTIFICATE", nodeDER},
		{f.CA, "CERTIFICATE", caDER},
	} {
		// Durable, folder included: a crash leaves a whole old or new file, never an empty key
		// (a pair that does not match is made anew at the next start: usable).
		if err := private.WriteSecret(w.path, pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der})); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
