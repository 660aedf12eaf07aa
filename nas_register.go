package gleaner

// Architecture parameters (hpo.ParamArch) are package nas's spaces: a
// campaign spec that names one validates only with them registered, so
// everything that reads specs (the CLI, workers, the Go client) gets them
// through this package.
import _ "github.com/gleaner-hpc/gleaner/nas"
