"""Tests of the tool-output parsers and of iowatch parse."""
