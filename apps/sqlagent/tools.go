package sqlagent

import (
	"context"
	"encoding/json"

	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/tool"
)

// The tools' names.
const (
	ToolListTables    = "list_tables"
	ToolDescribeTable = "describe_table"
	ToolSampleRows    = "sample_rows"
	ToolRunSQL        = "run_sql"
	ToolExplainSQL    = "explain_sql"
)

type (
	sourceArgs struct {
		Source string `json:"source,omitempty" jsonschema:"description=data source name (default: the first)"`
	}
	tableArgs struct {
		Table  string `json:"table" jsonschema:"minLength=1,description=table or view name as list_tables gives it"`
		Source string `json:"source,omitempty" jsonschema:"description=data source name (default: the first)"`
	}
	sampleArgs struct {
		Table  string `json:"table" jsonschema:"minLength=1,description=table or view name as list_tables gives it"`
		N      int    `json:"n,omitempty" jsonschema:"minimum=1,maximum=50,description=how many rows (default 5)"`
		Source string `json:"source,omitempty" jsonschema:"description=data source name (default: the first)"`
	}
	sqlArgs struct {
		SQL    string `json:"sql" jsonschema:"minLength=1,description=one read-only statement in the source's dialect"`
		Source string `json:"source,omitempty" jsonschema:"description=data source name (default: the first)"`
	}
)

// tableList is what list_tables returns.
type tableList struct {
	Source  string             `json:"source"`
	Dialect string             `json:"dialect"`
	Tables  []datasource.Table `json:"tables"`
}

// sqlResult is what run_sql returns: the result, with the source it ran
// on.
type sqlResult struct {
	Source string `json:"source"`
	*datasource.Result
}

// sampleResult is what sample_rows returns.
type sampleResult struct {
	Table string `json:"table"`
	*datasource.Result
}

// newTools returns the agent's five read tools over the sources. Each
// result is JSON, which the state's known tables, schemas, samples and
// SQL history are read back from.
func newTools(ss *Sources) (*tool.Registry, error) {
	reg := tool.NewRegistry()
	err := reg.Register("", "",
		tool.New(ToolListTables, "List the tables and views of a data source with approximate row counts.", tool.Read,
			func(ctx context.Context, a sourceArgs) (tableList, error) {
				s, err := ss.get(a.Source)
				if err != nil {
					return tableList{}, err
				}
				ts, err := s.Tables(ctx)
				return tableList{Source: s.Name, Dialect: string(s.Dialect()), Tables: ts}, ss.unavailable(s.Name, err)
			}),
		tool.New(ToolDescribeTable, "Describe a table: columns with types, nullability, defaults and comments; primary key; foreign keys; indexes.", tool.Read,
			func(ctx context.Context, a tableArgs) (*datasource.Table, error) {
				s, err := ss.get(a.Source)
				if err != nil {
					return nil, err
				}
				t, err := s.Describe(ctx, a.Table)
				return t, ss.unavailable(s.Name, err)
			}),
		tool.New(ToolSampleRows, "Show the first rows of a table to see what its values look like.", tool.Read,
			func(ctx context.Context, a sampleArgs) (sampleResult, error) {
				s, err := ss.get(a.Source)
				if err != nil {
					return sampleResult{}, err
				}
				n := a.N
				if n <= 0 {
					n = 5
				}
				res, err := s.Sample(ctx, a.Table, min(n, 50))
				return sampleResult{a.Table, res}, ss.unavailable(s.Name, err)
			}),
		tool.New(ToolRunSQL, "Run one read-only SQL statement and return columns and rows (capped; truncated says when there were more).", tool.Read,
			func(ctx context.Context, a sqlArgs) (sqlResult, error) {
				s, err := ss.get(a.Source)
				if err != nil {
					return sqlResult{}, err
				}
				res, err := s.Query(ctx, a.SQL)
				return sqlResult{s.Name, res}, ss.unavailable(s.Name, err)
			}),
		tool.New(ToolExplainSQL, "Show the database's plan for a read-only query without running it.", tool.Read,
			func(ctx context.Context, a sqlArgs) (*datasource.Result, error) {
				s, err := ss.get(a.Source)
				if err != nil {
					return nil, err
				}
				res, err := s.Explain(ctx, a.SQL)
				return res, ss.unavailable(s.Name, err)
			}),
	)
	return reg, err
}

// decodeArgs reads a tool call's arguments, ignoring what does not parse.
func decodeArgs[T any](raw string) T {
	var v T
	_ = json.Unmarshal([]byte(raw), &v)
	return v
}
