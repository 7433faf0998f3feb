// Command worker runs calc for the suite, as a controller manager runs an
// operator's code: it reads requests ("add 1 2", "mul 2 3", "scale 4",
// "notes"), one a line, and answers each on a line.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"example.com/calc/calc"
	"github.com/kubeharness/kubeharness/harness/coverage/flush"
)

func main() {
	stop, err := flush.Start(flush.Options{Every: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() { _ = stop() }()
	calc.Init()
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		n := make([]int, len(f))
		for i := 1; i < len(f); i++ {
			n[i], _ = strconv.Atoi(f[i])
		}
		switch f[0] {
		case "add":
			fmt.Println(calc.Add(n[1], n[2]))
		case "mul":
			fmt.Println(calc.Mul(n[1], n[2]))
		case "scale":
			fmt.Println(calc.Scale(n[1]))
		case "notes":
			fmt.Println(calc.Notes())
		}
	}
}
