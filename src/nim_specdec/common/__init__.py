"""The ground floor: redaction, logging, files written whole. Every stage may import it; it imports no stage."""
