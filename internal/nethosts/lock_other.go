//go:build !unix

package nethosts

import "errors"

func lockFile(string) (func(), error) {
	return nil, errors.New("nethosts: file locks need a Unix system")
}
