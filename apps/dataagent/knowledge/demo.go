package knowledge

import (
	_ "embed"
	"fmt"
)

// DemoSource is the name of the demo shop's data source (the SQL
// agent's demo database), which Demo's knowledge is about.
const DemoSource = "shop"

//go:embed demo/shop.yaml
var demoYAML []byte

// Demo returns the demo shop's knowledge: business terms (客单价 / average
// order value, 复购率 / repeat purchase rate, …), notes on its data,
// question → SQL pairs in Chinese and English that run on it, and a
// semantic model of its tables and columns with Chinese business names,
// synonyms and the meanings of its status, method, city and country
// values. Give it to Store.Seed for every owner to start with it.
func Demo() (*File, error) {
	f, err := Parse(demoYAML)
	if err != nil {
		return nil, fmt.Errorf("demo knowledge: %w", err)
	}
	return f, nil
}
