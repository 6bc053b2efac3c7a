import { runService } from '@mandate/shared';
import { service } from './service';

/** The only file that connects and listens. */
runService(service);
