# Reference fits for tests/test_glmm.py: lme4::glmer on librispeech_like.csv.gz.
#
#   Rscript tests/reference/lme4/fit.R            # writes tests/reference/lme4/reference.json
#   Rscript tests/reference/lme4/fit.R --timing [--reps N]   # only times default-control fits (median of
#                                                            # N runs, default 5), prints JSON to stdout
#
# Models (paper eq. 2-5, fitted separately, one speaker random intercept each):
#   insertions ~ gender + x1..x8 + offset(log(n_ref_words)) + (1 | speaker), poisson
#   cbind(delsub, n_ref_words - delsub) ~ gender + x1..x8 + (1 | speaker), binomial
# each with nAGQ = 1 (Laplace) and nAGQ = 10.
#
# Reference numbers come from fits run to tight tolerances (bobyqa, rhoend 1e-12, tolPwrss 1e-13) so that
# they are the maximum-likelihood estimates to ~1e-6 rather than lme4's default stopping point; the
# timings come from default-control fits (what a user gets), median of 5 runs. tolPwrss matters for the
# Laplace fits: lme4 takes log|L| from the PIRLS decomposition of the last-but-one iterate, so with the
# default (1e-7) or even 1e-12 the binomial Laplace deviance is off the exact-mode Laplace value by ~3e-5,
# which moves the finite-difference-Hessian SEs by ~1.6e-4; at 1e-13 the lag is negligible (1e-14 and
# below make PIRLS step-halving fail).
#
# Log-likelihood: for nAGQ > 1 lme4 evaluates the quadrature on the deviance-residual scale, so the
# logLik it reports is the full log-likelihood minus the saturated model's, sum_j log f(y_j | mu_j = y_j).
# We record both the value lme4 reports and the full one (reported + saturated). For nAGQ = 1 logLik()
# is already the full log-likelihood. As an independent check, `loglik_integrate` evaluates the full
# marginal log-likelihood at the fitted parameters with stats::integrate, speaker by speaker.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = FALSE)
script_dir <- dirname(normalizePath(sub("^--file=", "", args[grep("^--file=", args)])))
cli <- commandArgs(trailingOnly = TRUE)
timing_only <- "--timing" %in% cli
reps <- if ("--reps" %in% cli) as.integer(cli[which(cli == "--reps") + 1]) else 5L

data <- read.csv(file.path(script_dir, "librispeech_like.csv.gz"), stringsAsFactors = FALSE)
data$gender <- factor(data$gender, levels = c("F", "M"))
data$delsub <- data$deletions + data$substitutions
data$nondelsub <- data$n_ref_words - data$delsub
covariates <- paste0("x", 1:8)
rhs <- paste(c("gender", covariates), collapse = " + ")
formulas <- list(
  poisson = as.formula(paste("insertions ~", rhs, "+ offset(log(n_ref_words)) + (1 | speaker)")),
  binomial = as.formula(paste("cbind(delsub, nondelsub) ~", rhs, "+ (1 | speaker)"))
)

fit_one <- function(family, nagq, control) {
  glmer(formulas[[family]], data = data, family = family, nAGQ = nagq, control = control)
}

tight <- glmerControl(
  optimizer = "bobyqa", tolPwrss = 1e-13,
  optCtrl = list(maxfun = 1e6, rhobeg = 2e-3, rhoend = 1e-12)
)

saturated_loglik <- function(family) {
  if (family == "poisson") sum(dpois(data$insertions, data$insertions, log = TRUE))
  else sum(dbinom(data$delsub, data$n_ref_words, data$delsub / data$n_ref_words, log = TRUE))
}

integrated_loglik <- function(fit, family) {
  eta_fixed <- as.vector(model.matrix(fit) %*% fixef(fit))
  if (family == "poisson") eta_fixed <- eta_fixed + log(data$n_ref_words)
  sigma <- getME(fit, "theta")[[1]]
  total <- 0
  for (spk in unique(data$speaker)) {
    rows <- which(data$speaker == spk)
    log_cond <- function(b) {
      vapply(b, function(bb) {
        eta <- eta_fixed[rows] + bb
        if (family == "poisson") sum(dpois(data$insertions[rows], exp(eta), log = TRUE))
        else sum(dbinom(data$delsub[rows], data$n_ref_words[rows], plogis(eta), log = TRUE))
      }, numeric(1))
    }
    peak <- optimize(function(b) log_cond(b) + dnorm(b, 0, sigma, log = TRUE), c(-5, 5), maximum = TRUE)
    shift <- peak$objective
    value <- integrate(function(b) exp(log_cond(b) + dnorm(b, 0, sigma, log = TRUE) - shift),
                       -Inf, Inf, rel.tol = 1e-12, subdivisions = 1000L)$value
    total <- total + log(value) + shift
  }
  total
}

time_default <- function(family, nagq) {
  times <- vapply(seq_len(reps), function(i) {
    unname(system.time(fit_one(family, nagq, glmerControl()))["elapsed"])
  }, numeric(1))
  median(times)
}

timings <- list()
for (family in names(formulas)) for (nagq in c(1, 10)) {
  timings[[sprintf("%s_nagq%d", family, nagq)]] <- time_default(family, nagq)
}
if (timing_only) {
  cat(toJSON(list(lme4_seconds = timings, reps = reps), auto_unbox = TRUE, digits = NA), "\n")
  quit(status = 0)
}

results <- list()
for (family in names(formulas)) for (nagq in c(1, 10)) {
  fit <- fit_one(family, nagq, tight)
  default_fit <- fit_one(family, nagq, glmerControl())
  reported <- as.numeric(logLik(fit))
  saturated <- saturated_loglik(family)
  full <- if (nagq > 1) reported + saturated else reported
  results[[sprintf("%s_nagq%d", family, nagq)]] <- list(
    family = family,
    nagq = nagq,
    coef = as.list(fixef(fit)),
    se = as.list(setNames(sqrt(diag(as.matrix(vcov(fit)))), names(fixef(fit)))),
    sigma = getME(fit, "theta")[[1]],
    loglik_reported = reported,
    loglik_saturated = saturated,
    loglik = full,
    loglik_integrate = integrated_loglik(fit, family),
    default_control_coef = as.list(fixef(default_fit)),
    default_control_sigma = getME(default_fit, "theta")[[1]],
    lme4_seconds_default_control = timings[[sprintf("%s_nagq%d", family, nagq)]],
    optimizer_messages = fit@optinfo$conv$lme4$messages
  )
}

out <- list(
  generated_by = "tests/reference/lme4/fit.R",
  data = "librispeech_like.csv.gz",
  r_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  cpu = tryCatch(trimws(sub(".*: ", "", grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1])),
                 error = function(e) NA),
  timing = sprintf("median elapsed seconds of %d default-control glmer fits", reps),
  fits = results
)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), file.path(script_dir, "reference.json"))
cat("wrote", file.path(script_dir, "reference.json"), "\n")
