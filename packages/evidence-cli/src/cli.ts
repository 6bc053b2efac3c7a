console.error('mandate-evidence: not implemented yet'); process.exit(2);
