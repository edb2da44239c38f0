package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"hash"

	"github.com/cohort-dev/cohort/record"
)

// Mechanism is a SCRAM mechanism by Kafka's number for it (the
// ScramMechanism of AlterUserScramCredentials and
// DescribeUserScramCredentials).
type Mechanism int8

// The SCRAM mechanisms Kafka serves.
const (
	ScramSHA256 Mechanism = 1
	ScramSHA512 Mechanism = 2
)

// Mechanisms are the SCRAM mechanisms, in Kafka's order.
var Mechanisms = []Mechanism{ScramSHA256, ScramSHA512}

// Iteration bounds of a SCRAM credential: Kafka's ScramMechanism
// minimum and maximum (AlterUserScramCredentials answers
// UNACCEPTABLE_CREDENTIAL outside them).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// Name is the SASL name, "SCRAM-SHA-256" or "SCRAM-SHA-512"; "" for an
// unknown number.
func (m Mechanism) Name() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// Valid reports whether m is a known mechanism.
func (m Mechanism) Valid() bool { return m.Name() != "" }

func (m Mechanism) hash() func() hash.Hash {
	if m == ScramSHA256 {
		return sha256.New
	}
	return sha512.New
}

// MechanismByName returns the SCRAM mechanism with a SASL name.
func MechanismByName(name string) (Mechanism, bool) {
	for _, m := range Mechanisms {
		if m.Name() == name {
			return m, true
		}
	}
	return 0, false
}

// SaltedPassword is RFC 5802's Hi(password, salt, i): what a client
// computes and AlterUserScramCredentials carries (kadm computes it from
// the password, which never leaves the client). Passwords are taken as
// their UTF-8 bytes, without SASLprep, as Kafka's ScramFormatter does.
func SaltedPassword(m Mechanism, password string, salt []byte, iterations int) []byte {
	h := m.hash()
	out, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		// Only FIPS-mode limits fail, which a Kafka-sized salt and
		// iteration count never reach.
		panic("security: pbkdf2: " + err.Error())
	}
	return out
}

// CredentialFromSalted is the stored credential of a salted password:
// the salt, the iterations, StoredKey = H(HMAC(salted, "Client Key")) and
// ServerKey = HMAC(salted, "Server Key") (RFC 5802, section 3).
func CredentialFromSalted(m Mechanism, salt, salted []byte, iterations int32) record.ScramCredential {
	h := m.hash()
	mac := func(key []byte, msg string) []byte {
		x := hmac.New(h, key)
		x.Write([]byte(msg))
		return x.Sum(nil)
	}
	d := h()
	d.Write(mac(salted, "Client Key"))
	return record.ScramCredential{
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  d.Sum(nil),
		ServerKey:  mac(salted, "Server Key"),
	}
}

// NewCredential makes a credential for a password with a fresh random
// salt, as kafka-configs.sh --add-config 'SCRAM-SHA-512=[password=...]'
// does on the client side.
func NewCredential(m Mechanism, password string, iterations int) record.ScramCredential {
	salt := make([]byte, 32)
	rand.Read(salt)
	return CredentialFromSalted(m, salt, SaltedPassword(m, password, salt, iterations), int32(iterations))
}

// CheckPassword reports whether password is the one c was made from: the
// check SASL/PLAIN does against the SCRAM credentials, deriving the keys
// again (constant-time compare).
func CheckPassword(m Mechanism, c record.ScramCredential, password string) bool {
	if c.Iterations < 1 || c.Iterations > MaxIterations*16 {
		return false
	}
	got := CredentialFromSalted(m, c.Salt, SaltedPassword(m, password, c.Salt, int(c.Iterations)), c.Iterations)
	return hmac.Equal(got.StoredKey, c.StoredKey)
}
