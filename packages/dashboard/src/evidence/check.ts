export { verifyBundleText, type CheckResult } from '../../../evidence-cli/src/verify';
