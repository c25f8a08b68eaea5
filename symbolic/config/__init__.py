"""The shared configuration: glossary, model shape, training config, byte widths, errors, validity rules."""
