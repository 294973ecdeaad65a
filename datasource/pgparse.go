//go:build cgo

package datasource

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// pgParser reports that Postgres statements are read by PostgreSQL's own
// parser (libpg_query) as well as by the lexer.
const pgParser = true

// checkPostgres reads stmt with PostgreSQL's parser: it must be exactly
// one SELECT (VALUES and TABLE are SELECTs too), EXPLAIN of one, or SHOW,
// and nowhere in its tree a write (a data-modifying CTE), SELECT INTO, a
// locking clause, or a call of a Denylist function.
func checkPostgres(stmt string) error {
	tree, err := pg.Parse(stmt)
	if err != nil {
		return refuse("the statement does not parse: %s", firstLine(err.Error()))
	}
	if n := len(tree.GetStmts()); n != 1 {
		return refuse("only one read-only statement is allowed; found %d statements", n)
	}
	root := tree.GetStmts()[0].GetStmt()
	switch {
	case root.GetSelectStmt() != nil, root.GetVariableShowStmt() != nil:
	case root.GetExplainStmt() != nil:
		if root.GetExplainStmt().GetQuery().GetSelectStmt() == nil {
			return refuse("only one read-only statement is allowed; found EXPLAIN %s", nodeName(root.GetExplainStmt().GetQuery()))
		}
	default:
		return refuse("only one read-only statement is allowed; found %s", nodeName(root))
	}
	return walkPG(root.ProtoReflect())
}

// nodeName names the statement in a parse node: DeleteStmt gives DELETE.
func nodeName(n *pg.Node) string {
	if n == nil {
		return "nothing"
	}
	m := n.ProtoReflect()
	var name string
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		name = string(fd.Message().Name())
		return false
	})
	switch name {
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
	}
	return strings.TrimSuffix(name, "Stmt") + " statement"
}

// walkPG walks a parse tree and refuses what may not appear in a query.
func walkPG(m protoreflect.Message) error {
	switch x := m.Interface().(type) {
	case *pg.InsertStmt:
		return refuse("only one read-only statement is allowed; found INSERT")
	case *pg.UpdateStmt:
		return refuse("only one read-only statement is allowed; found UPDATE")
	case *pg.DeleteStmt:
		return refuse("only one read-only statement is allowed; found DELETE")
	case *pg.MergeStmt:
		return refuse("only one read-only statement is allowed; found MERGE")
	case *pg.IntoClause:
		return refuse("INTO writes the result to a table; it is not allowed in a read-only query")
	case *pg.LockingClause:
		return refuse("FOR UPDATE/SHARE locks rows; it is not allowed in a read-only query")
	case *pg.FuncCall:
		if names := x.GetFuncname(); len(names) > 0 {
			name := names[len(names)-1].GetString_().GetSval()
			if den := deniedFunction(Postgres, name); den != nil {
				return refuse("%s() %s; it is not allowed in a read-only query", den.Name, den.Why)
			}
		}
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = walkPG(l.Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			err = walkPG(v.Message())
		}
		return err == nil
	})
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
