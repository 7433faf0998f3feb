package suite

import "fmt"

// expect fails the spec unless got is want.
func expect(got, want any) {
	if fmt.Sprint(got) != fmt.Sprint(want) {
		panic(fmt.Sprintf("got %v, want %v", got, want))
	}
}
