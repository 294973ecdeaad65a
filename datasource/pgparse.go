//go:build cgo

package datasource

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/tidwall/gjson"
)

// checkPostgres reads stmt with PostgreSQL's parser: it must be exactly
// one SELECT (VALUES and TABLE are SELECTs too), EXPLAIN of one, or SHOW,
// and nowhere in its tree a write (a data-modifying CTE), SELECT INTO, a
// locking clause, or a call of a Denylist function. The tree is read as
// the JSON libpg_query writes, which costs a fraction of its protobuf
// form.
func checkPostgres(stmt string) error {
	tree, err := pg.ParseToJSON(stmt)
	if err != nil {
		return refuse("the statement does not parse: %s", firstLine(err.Error()))
	}
	stmts := gjson.Get(tree, "stmts").Array()
	if len(stmts) != 1 {
		return refuse("only one read-only statement is allowed; found %d statements", len(stmts))
	}
	root := stmts[0].Get("stmt")
	kind := nodeKind(root)
	switch kind {
	case "SelectStmt", "VariableShowStmt":
	case "ExplainStmt":
		if q := nodeKind(root.Get("ExplainStmt.query")); q != "SelectStmt" {
			return refuse("only one read-only statement is allowed; found EXPLAIN %s", statementName(q))
		}
	default:
		return refuse("only one read-only statement is allowed; found %s", statementName(kind))
	}
	return walkPG(root)
}

// nodeKind returns the type of a parse node: the one key of its object.
func nodeKind(n gjson.Result) string {
	var kind string
	n.ForEach(func(k, _ gjson.Result) bool {
		kind = k.String()
		return false
	})
	return kind
}

// statementName names a statement's node type: DeleteStmt gives DELETE.
func statementName(kind string) string {
	switch kind {
	case "InsertStmt":
		return "INSERT"
	case "UpdateStmt":
		return "UPDATE"
	case "DeleteStmt":
		return "DELETE"
	case "MergeStmt":
		return "MERGE"
	case "CopyStmt":
		return "COPY"
	case "TransactionStmt":
		return "a transaction statement"
	case "VariableSetStmt":
		return "SET"
	case "":
		return "nothing"
	}
	return strings.TrimSuffix(kind, "Stmt") + " statement"
}

// walkPG walks a parse tree and refuses what may not appear in a query.
func walkPG(n gjson.Result) error {
	var err error
	switch {
	case n.IsArray():
		n.ForEach(func(_, v gjson.Result) bool {
			err = walkPG(v)
			return err == nil
		})
	case n.IsObject():
		n.ForEach(func(k, v gjson.Result) bool {
			switch k.String() {
			case "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt":
				err = refuse("only one read-only statement is allowed; found %s", statementName(k.String()))
			case "intoClause", "IntoClause":
				err = refuse("INTO writes the result to a table; it is not allowed in a read-only query")
			case "lockingClause", "LockingClause":
				err = refuse("FOR UPDATE/SHARE locks rows; it is not allowed in a read-only query")
			case "FuncCall":
				names := v.Get("funcname").Array()
				if len(names) > 0 {
					if den := deniedFunction(Postgres, names[len(names)-1].Get("String.sval").String()); den != nil {
						err = refuse("%s() %s; it is not allowed in a read-only query", den.Name, den.Why)
						break
					}
				}
				err = walkPG(v)
			default:
				err = walkPG(v)
			}
			return err == nil
		})
	}
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
