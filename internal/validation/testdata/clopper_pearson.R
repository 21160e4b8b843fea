# Writes clopper_pearson.tsv: exact (Clopper–Pearson) intervals computed by
# R's binom.test, an implementation independent of internal/validation, for
# the cases below. TestClopperPearsonMatchesR compares ClopperPearson with
# the stored table; TestClopperPearsonTableIsR runs this script again and
# compares its output with the stored table. Regenerate with
#
#   Rscript --vanilla internal/validation/testdata/clopper_pearson.R > internal/validation/testdata/clopper_pearson.tsv
#
# (r-base-core; scripts/test-deps.sh installs it).
cases <- list(
  c(0, 1), c(1, 1),                      # n = 1
  c(0, 2), c(1, 2), c(2, 2),
  c(0, 5), c(1, 5), c(4, 5), c(5, 5),
  c(0, 10), c(3, 10), c(5, 10), c(10, 10),
  c(0, 30), c(1, 30), c(29, 30), c(30, 30),
  c(15, 40),
  c(0, 100), c(1, 100), c(50, 100), c(95, 100), c(99, 100), c(100, 100),
  c(37, 400),
  c(0, 385), c(19, 385), c(385, 385),
  c(1, 2000), c(1000, 2000), c(1999, 2000),
  c(0, 10000), c(7, 10000), c(9990, 10000)
)
levels <- c(0.80, 0.90, 0.95, 0.99)
cat("x\tn\tconfidence\tlower\tupper\n")
for (xn in cases) {
  for (conf in levels) {
    ci <- binom.test(xn[1], xn[2], conf.level = conf)$conf.int
    cat(sprintf("%d\t%d\t%.2f\t%.17g\t%.17g\n", xn[1], xn[2], conf, ci[1], ci[2]))
  }
}
