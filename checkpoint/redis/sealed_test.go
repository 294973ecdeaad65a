package redis

import (
	"testing"

	"github.com/loomkit/loom/checkpoint/savertest"
)

// TestSealed runs savertest.RunSealed under a fresh key prefix, whose
// dump is every element of every key under it.
func TestSealed(t *testing.T) {
	st := storage
	st.Dump = func(t *testing.T, prefix string) []byte {
		ctx := t.Context()
		c := rawClient(t)
		var all []byte
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			var vals []string
			var err error
			switch typ := c.Type(ctx, key).Val(); typ {
			case "list":
				vals, err = c.LRange(ctx, key, 0, -1).Result()
			case "hash":
				var m map[string]string
				m, err = c.HGetAll(ctx, key).Result()
				for k, v := range m {
					vals = append(vals, k, v)
				}
			case "zset":
				vals, err = c.ZRange(ctx, key, 0, -1).Result()
			default:
				t.Fatalf("key %s of type %s", key, typ)
			}
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, key...)
			for _, v := range vals {
				all = append(all, v...)
			}
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		return all
	}
	savertest.RunSealed(t, st)
}
