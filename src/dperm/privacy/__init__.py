"""Privacy arithmetic (sensitivities, slack, sigma*) and the privacy record."""
