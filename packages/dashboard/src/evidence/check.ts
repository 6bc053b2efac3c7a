export { verifyBundleText, type CheckResult } from 'mandate-evidence/verify';
