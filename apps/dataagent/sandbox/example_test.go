package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/loomkit/loom/apps/dataagent/sandbox"
)

func Example() {
	ctx := context.Background()
	r := &sandbox.Runner{}
	if err := r.Check(ctx); errors.Is(err, sandbox.ErrUnavailable) {
		// Analyse without Python, and say so in the report.
		fmt.Println("no Python sandbox:", err)
		return
	}
	res, err := r.Run(ctx, sandbox.Job{
		Code: `import pandas as pd
df = pd.read_csv("orders.csv")
print(df["amount"].sum())
`,
		Files: map[string][]byte{"orders.csv": []byte("id,amount\n1,30\n2,12\n")},
	})
	if err != nil {
		fmt.Println("sandbox:", err)
		return
	}
	if !res.OK() {
		fmt.Println(res.Stopped, res.Stderr)
		return
	}
	fmt.Println(strings.TrimSpace(res.Stdout)) // 42
	for name, data := range res.Files {
		fmt.Println("wrote", name, len(data), "bytes")
	}
}
