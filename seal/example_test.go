package seal_test

import (
	"encoding/base64"
	"fmt"
	"log"
	"strings"

	"github.com/loomkit/loom/seal"
)

// Keys as LOOM_ENCRYPTION_KEYS holds them: the first seals, every one
// opens. A sealed value is a JSON string that names its key.
func ExampleParseKeys() {
	k1 := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	k2 := base64.StdEncoding.EncodeToString([]byte("fedcba9876543210fedcba9876543210"))
	keys, err := seal.ParseKeys("k2:" + k2 + ",k1:" + k1)
	if err != nil {
		log.Fatal(err)
	}
	sealed, err := keys.Seal([]byte(`{"card":"4111 1111 1111 1111"}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(string(sealed), `"sealed:aes256gcm:k2:`), strings.Contains(string(sealed), "4111"))
	plain, err := keys.Open(sealed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(plain))
	// Output:
	// true false
	// {"card":"4111 1111 1111 1111"}
}
