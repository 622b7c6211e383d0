"""Text in and out, safely: secrets masked in every line printed (redact, logs), JSON parsed strictly with
limits (strict_json) and made read-only where it is shared (frozen_json), and the bounded regular expressions
capture filters use (linear_regex). A ground floor: every stage may import it; it imports only errors."""
