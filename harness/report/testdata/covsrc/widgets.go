// Command widgets is the code under test of the report's coverage
// fixture (TestRecordCoverageFixture): each spec of testdata/runs/one runs
// it with its own operation, as a suite's specs drive an operator.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: widgets create|reject|settle|list|rotate")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "create":
		create("w-1", 3)
	case "reject":
		if err := admit(1000); err != nil {
			fmt.Println(err)
		}
	case "settle":
		create("w-2", 1)
		settle("w-2")
	case "list":
		list()
	case "rotate":
		rotate()
	case "resize":
		resize("w-1", 5)
	}
}

func create(name string, size int) {
	if err := admit(size); err != nil {
		fmt.Println("denied:", err)
		return
	}
	fmt.Println("created", name)
}

func admit(size int) error {
	if size > 100 {
		return fmt.Errorf("a widget of size %d is huge", size)
	}
	return nil
}

func settle(name string) {
	fmt.Println("settled", name)
}

func list() {
	for _, ns := range []string{"a", "b"} {
		fmt.Println("namespace", ns)
	}
}

func rotate() {
	fmt.Println("rotated the CA")
}

// resize runs only on kind, where the fixture's run skipped it: nothing
// reaches it.
func resize(name string, size int) {
	if size <= 0 {
		fmt.Println("refusing to resize", name, "to nothing")
		return
	}
	fmt.Println("resized", name, "to", size)
}
